import Foundation

/// The presentation times (s) of the video buffers GStreamer's qtdemux reads from `file`.
public func qtdemuxVideoBuffers(_ file: URL) throws -> [Double] {
  let output = try run(
    "/usr/bin/gst-launch-1.0",
    ["-v", "filesrc", "location=\(file.path)", "!", "qtdemux", "name=d", "d.video_0", "!", "fakesink", "silent=false"])
  return output.split(separator: "\n").compactMap { line -> Double? in
    guard line.contains("last-message = chain"), let range = line.range(of: "pts: ") else { return nil }
    let fields = line[range.upperBound...].prefix { $0 != "," }.split(separator: ":")
    guard fields.count == 3, let h = Double(fields[0]), let m = Double(fields[1]), let s = Double(fields[2]) else {
      return nil
    }
    return h * 3600 + m * 60 + s
  }
}

/// The timestamps (ms) of the video frames MKVToolNix reads from the MP4 `file` with its own reader (not
/// libavformat, not GStreamer): remuxed to Matroska by `mkvmerge`, then the video track's timestamps
/// extracted by `mkvextract`. A third independent demuxer, as GPAC would be (GPAC is not packaged for this
/// Debian). Warnings (exit 1) are allowed, errors throw.
public func mkvmergeVideoTimestamps(_ file: URL) throws -> [Double] {
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-mkv-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: directory) }
  let identified = try JSONSerialization.jsonObject(with: runForData("/usr/bin/mkvmerge", ["-J", file.path]))
  guard let tracks = (identified as? [String: Any])?["tracks"] as? [[String: Any]],
    let video = tracks.first(where: { $0["type"] as? String == "video" })?["id"] as? Int
  else { throw JudgeFailure(what: "mkvmerge found no video track in \(file.path)") }
  let remuxed = directory.appendingPathComponent("remuxed.mkv")
  let timestamps = directory.appendingPathComponent("timestamps.txt")
  for (tool, arguments) in [
    ("/usr/bin/mkvmerge", ["-q", "-o", remuxed.path, file.path]),
    ("/usr/bin/mkvextract", ["-q", remuxed.path, "timestamps_v2", "\(video):\(timestamps.path)"]),
  ] {
    let ended = try ChildProcess(tool, arguments, captureOutput: false, captureErrors: false).finish()
    guard ended.reason == .exit, ended.status <= 1 else {
      throw JudgeFailure(what: "\(tool) \(arguments.joined(separator: " ")): exit \(ended.status)")
    }
  }
  // mkvextract ends the list with the end of the last frame (an ffmpeg-made MP4 of 60 frames at 20 fps
  // gives 61 values, the last 3000): that one is no frame.
  return Array(
    try String(contentsOf: timestamps, encoding: .utf8).split(separator: "\n").compactMap { Double($0) }.dropLast())
}

/// A judge could not read what it was given.
public struct JudgeFailure: Error, CustomStringConvertible {
  /// What went wrong.
  public let what: String
  /// Says what went wrong.
  public var description: String { what }

  /// A failure saying `what`.
  public init(what: String) { self.what = what }
}

/// The luma of the picture ffmpeg shows at `seconds` of `url` (a video or a still), optionally cropped to
/// `crop` (x, y, width, height) and then scaled bilinearly to `width`×`height`: one byte per pixel.
public func ffmpegLuma(
  of url: URL, at seconds: Double = 0, crop: (x: Int, y: Int, width: Int, height: Int)? = nil, width: Int,
  height: Int
) throws -> [UInt8] {
  var filters: [String] = []
  if let crop { filters.append("crop=\(crop.width):\(crop.height):\(crop.x):\(crop.y)") }
  filters.append("scale=\(width):\(height):flags=bilinear")
  // A still has no time to seek to: ffmpeg's image reader gives nothing after a seek.
  let seek = seconds > 0 ? ["-ss", String(format: "%.3f", seconds)] : []
  return [UInt8](
    try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error"] + seek + [
        "-i", url.path, "-frames:v", "1", "-vf", filters.joined(separator: ","), "-f", "rawvideo", "-pix_fmt",
        "gray", "-",
      ]))
}

/// PSNR in dB of two equal-sized byte planes (0 when their sizes differ, 99 when they are equal).
public func lumaPSNR(_ a: [UInt8], _ b: [UInt8]) -> Double {
  guard a.count == b.count, !a.isEmpty else { return 0 }
  var sum = 0.0
  for (x, y) in zip(a, b) {
    let d = Double(x) - Double(y)
    sum += d * d
  }
  let mse = sum / Double(a.count)
  return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

/// The times of a file's flashes (pictures whose mean luma is high) and beeps (where the sound rises
/// out of half a second of silence), in seconds.
public func flashesAndBeeps(in file: String) throws -> (flashes: [Double], beeps: [Double]) {
  // Flashes: pictures whose mean luma is high, by their presentation time.
  let stats = try run(
    "/usr/bin/ffmpeg",
    [
      "-v", "error", "-i", file, "-vf", "signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null",
      "-",
    ])
  var flashes: [Double] = []
  var time: Double?
  for line in stats.split(separator: "\n") {
    if let range = line.range(of: "pts_time:") {
      time = Double(line[range.upperBound...].prefix { $0 != " " })
    } else if let range = line.range(of: "YAVG="), let value = Double(line[range.upperBound...]), value > 100,
      let time, flashes.last.map({ time - $0 > 0.5 }) ?? true
    {
      flashes.append(time)
    }
  }
  // Beeps: where the sound rises out of silence.
  let pcm = try runForData(
    "/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
  var beeps: [Double] = []
  pcm.withUnsafeBytes { raw in
    let samples = raw.bindMemory(to: Int16.self)
    var quiet = 48_000
    for (index, sample) in samples.enumerated() {
      if abs(Int(sample)) > 3000 {
        if quiet >= 24_000 { beeps.append(Double(index) / 48_000) }
        quiet = 0
      } else {
        quiet += 1
      }
    }
  }
  return (flashes, beeps)
}
