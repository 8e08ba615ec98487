import Foundation
import MediaTestSupport
import Testing

/// `tipipe record --input` against what a hostile user (or a damaged disk) gives it: a file with damaged
/// packets is recorded to its end, as ffmpeg decodes it; a signal keeps what was recorded, reported,
/// picture and sound ending together.
@Suite struct RecordInputHostileTests {
  /// A `seconds` long H.264 (B-frames) + AAC file of `container` ("mp4" or "mpegts") and `size` at `path`.
  static func makeFile(_ path: String, container: String, seconds: Int = 10, size: String = "320x240") throws {
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=\(size):r=25:d=\(seconds)", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=48000:d=\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "3",
        "-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", container, path,
      ])
  }

  @Test(
    "a file with damaged packets (bad bytes in its media, a truncated last packet) is recorded to its end: the damaged packets are skipped, as ffmpeg skips them",
    arguments: ["damaged", "truncated"])
  func damagedPacketsAreSkipped(kind: String) throws {
    let directory = try TemporaryDirectory("record-damaged")
    let source = directory.url.appendingPathComponent("source").path
    try Self.makeFile(source, container: kind == "damaged" ? "mp4" : "mpegts")
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
    if kind == "damaged" {
      // Five sound packets a third of the way in overwritten with noise (where ffprobe says they lie).
      let packets = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pos,size", "-of", "csv=p=0", source]
      ).split(separator: "\n").compactMap { line -> (size: Int, position: Int)? in
        let fields = line.split(separator: ",").compactMap { Int($0) }
        return fields.count == 2 ? (fields[0], fields[1]) : nil
      }
      try #require(packets.count > 300)
      var state: UInt64 = 2
      for packet in packets[150..<155] {
        for index in packet.position..<packet.position + packet.size {
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
      }
    } else {
      // Cut in the middle of a TS packet, 40 % of the way in.
      bytes = Array(bytes.prefix(bytes.count * 2 / 5 + 101))
    }
    let input = directory.url.appendingPathComponent("\(kind).\(kind == "damaged" ? "mp4" : "ts")")
    try Data(bytes).write(to: input)
    // The judge: how far ffmpeg decodes the same file.
    let decoded = try Double(
      run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", input.path]
      ).trimmingCharacters(in: .whitespacesAndNewlines))
    let length = try #require(decoded)
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", input.path, "--name", kind, "--fps", "25", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    #expect(done.stdout.contains("\"file\":"), "\(done.stdout)")
    // Said on standard error: the skipped packets' frames are missing (the cut TS's last packet is only
    // short: it is dropped when read).
    if kind == "damaged" {
      #expect(done.stderr.hasPrefix("warning: ") && done.stderr.contains("damaged packets were"), "\(done.stderr)")
    }
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/\(kind).mp4"))
    // Both tracks run (nearly) to the file's end: a frame or two of the last packets may be lost.
    #expect(streams.count == 2, "\(streams)")
    for stream in streams { #expect((stream.duration ?? 0) > length - 0.7, "\(streams) of \(length) s") }
  }

  @Test(
    "SIGTERM in the middle of a recording keeps what was recorded: reported, then the cancelled line; picture and sound end together"
  )
  func aSignalKeepsTheRecording() throws {
    let directory = try TemporaryDirectory("record-signal")
    let source = directory.url.appendingPathComponent("long.mp4").path
    // Pictures big enough that the decoder has packets waiting when the signal comes.
    try Self.makeFile(source, container: "mp4", seconds: 120, size: "640x360")
    let root = directory.url.appendingPathComponent("root").path
    let file = root + "/Recordings/cut.mp4"
    let process = try tipipeChild(["record", "--input", source, "--name", "cut", "--fps", "25", "--data-root", root])
    // Seconds of fragments are written (one a second of media) before the signal: the decoder has fallen
    // behind the reading by then (what waited for it was lost, a second of picture, before the fix).
    try waitUntil("the recording's first fragments") {
      ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 1_000_000
    }
    process.signal(SIGTERM)
    let ended = Finished(try process.finish())
    #expect(ended.status == 1)
    #expect(ended.stderr == "error: cancelled (6115): interrupted by SIGTERM\n", "\(ended.stderr)")
    let line = try #require(
      try JSONSerialization.jsonObject(with: Data(ended.stdout.utf8)) as? [String: Any], "\(ended.stdout)")
    #expect(line["file"] as? String == file)
    let reported = try #require(line["duration_ms"] as? Int)
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: file))
    let video = try #require(streams.first?.duration)
    let audio = try #require(streams.last?.duration)
    #expect(video > 1 && video < 119, "\(streams)")
    // Each track as far as the file's order took it: within the file's interleaving (ffmpeg's MP4 chunks
    // of up to half a second), not seconds apart as when what waited for the decoders was dropped.
    #expect(abs(video - audio) < 0.5, "\(streams)")
    #expect(abs(Double(reported) / 1000 - max(video, audio)) < 0.1, "\(reported) ms, \(streams)")
    #expect(try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"]).isEmpty)
  }

  @Test(
    "record --grid of files one of whose sound starts 20 s after its picture completes: the late sound is waited for seconds, not forever"
  )
  func aGridWithLateSoundCompletes() throws {
    let directory = try TemporaryDirectory("record-grid-late")
    let early = directory.url.appendingPathComponent("early.mp4").path
    try Self.makeFile(early, container: "mp4", seconds: 40)
    // The same picture, its sound from 20 s on: its reading, held back with its picture while the mixers
    // wait for that sound, locked both compositors when every input was waited for however long (helper-50).
    let late = directory.url.appendingPathComponent("late.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-i", early, "-itsoffset", "20", "-i", early, "-map", "0:v", "-map", "1:a", "-t", "40",
        "-c", "copy", late,
      ])
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe([
      "record", "--grid", "--input", early, "--input", late, "--name", "grid", "--fps", "10", "--size", "160x120",
      "--data-root", root,
    ])
    #expect(done.status == 0, "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/grid.mp4"))
    #expect(streams.count == 2 && streams.allSatisfy { abs(($0.duration ?? 0) - 40) < 0.5 }, "\(streams)")
  }
}
