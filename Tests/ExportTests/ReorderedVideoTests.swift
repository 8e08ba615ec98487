import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// Media whose decode order differs from its presentation order (B-frames) written with correct
/// decode times and composition offsets, judged by ffprobe, by decoding the output, and by qtdemux.
@Suite("Export and recording of media with B-frames")
struct ReorderedVideoTests {
  static let start = MediaTime(milliseconds: recordingStart)

  /// A 4-second 25 fps file with B-frames, made by the ffmpeg CLI.
  func makeFile(codec: String, in directory: URL) throws -> URL {
    let file = directory.appendingPathComponent("\(codec).mp4")
    let video: [String] =
      codec == "h264"
      ? ["-c:v", "libx264", "-bf", "3", "-g", "25"]
      : ["-c:v", "libx265", "-x265-params", "bframes=4:keyint=25:log-level=error", "-tag:v", "hvc1"]
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=16000", "-t", "4",
      ] + video + ["-c:a", "aac", file.path])
    return file
  }

  struct Packet {
    var pts: Double
    var dts: Double
  }

  /// The video packets of `file` in file (decode) order.
  func packets(_ file: URL) throws -> [Packet] {
    try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,dts_time", "-of", "csv=p=0",
        file.path,
      ]
    ).split(separator: "\n").compactMap { line in
      let fields = line.split(separator: ",").compactMap { Double($0) }
      return fields.count == 2 ? Packet(pts: fields[0], dts: fields[1]) : nil
    }
  }

  /// What decoding the whole file says: the frame count and libavcodec's complaints.
  func decode(_ file: URL) throws -> (frames: Int, errors: String) {
    let ended = try ChildProcess(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of",
        "csv=p=0", file.path,
      ]
    ).finish()
    let text = String(decoding: ended.output, as: UTF8.self)
    let errorText = String(decoding: ended.errors, as: UTF8.self)
    return (Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, errorText)
  }

  func expectCorrectOrder(_ file: URL, frames: Int, _ label: String) throws {
    let written = try packets(file)
    #expect(written.count == frames, "\(label): \(written.count) packets")
    let dts = written.map(\.dts)
    #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 }, "\(label): decode times increase")
    #expect(written.contains { $0.pts != $0.dts }, "\(label): the frames are reordered")
    let presented = written.map(\.pts).sorted()
    #expect(presented.first == 0, "\(label)")
    #expect(zip(presented, presented.dropFirst()).allSatisfy { abs($1 - $0 - 0.04) < 0.0005 }, "\(label)")
    let decoded = try decode(file)
    #expect(decoded.frames == frames, "\(label): \(decoded.frames) frames decoded")
    #expect(decoded.errors.isEmpty, "\(label): \(decoded.errors)")
    #expect(try qtdemuxVideoBuffers(file).count == frames, "\(label): qtdemux")
  }

  @Test(
    "Exporter writes H.264 and H.265 with B-frames with monotonic decode times and every frame",
    arguments: ["h264", "h265"])
  func export(codec: String) throws {
    let directory = try TemporaryDirectory()
    let input = try makeFile(codec: codec, in: directory.url)
    let executor = ThreadExecutor(name: "test.bframes")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let source = MediaFileSource(path: input.path, startTime: Self.start)
    let exporter = Exporter(
      configuration: .init(
        range: MediaRange(start: Self.start, end: MediaTime(microseconds: Self.start.microseconds + 4_000_000)),
        videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1),
        workingPath: directory.url.appendingPathComponent("work.mp4").path))
    pipeline.connect(source, to: exporter)
    let failures = try pipeline.runToCompletion().failures
    #expect(failures.isEmpty, "\(failures.map { "\($0.error)" })")
    let output = directory.url.appendingPathComponent("out.mp4")
    try exporter.finalizeFile(to: output.path)
    let report = exporter.report(termination: .exhausted, cause: 0)
    #expect(report.coveredDurationMs == 4000)
    #expect(report.complete, "\(report.gaps)")
    try expectCorrectOrder(output, frames: 100, "export \(codec)")
  }

  @Test("MP4Writer records H.264 with B-frames with monotonic decode times and every frame")
  func record() throws {
    let directory = try TemporaryDirectory()
    let input = try makeFile(codec: "h264", in: directory.url)
    let executor = ThreadExecutor(name: "test.bframes")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let output = directory.url.appendingPathComponent("rec.mp4")
    let source = MediaFileSource(path: input.path, startTime: Self.start)
    let writer = MP4Writer(destination: output, videoTrack: TrackID(.video, channel: 0))
    pipeline.connect(source, to: writer)
    let failures = try pipeline.runToCompletion().failures
    #expect(failures.isEmpty, "\(failures.map { "\($0.error)" })")
    try expectCorrectOrder(output, frames: 100, "record")
  }
}
