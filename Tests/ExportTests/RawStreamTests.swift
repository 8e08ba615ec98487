import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing
import TiCloudStorage

/// Raw H.264 and H.265 elementary streams with B-frames: no timestamps at all, so the order their
/// pictures are shown in comes from decoding them (`PresentationOrder`). Judged by ffmpeg, which decodes
/// a raw stream in the order its pictures are shown.
@Suite("Raw video streams with B-frames")
struct RawStreamTests {
  /// A 4-second 25 fps raw stream with B-frames (libx264 `bf 3`, libx265 `bframes 4`), keyframes every 2 s.
  /// The H.265 stream has no sample adaptive offset, which libx265 uses by default: an edge re-encoded
  /// into it has an SPS and slice headers that the stream's own SPS would misread.
  static func makeRawStream(_ codec: String, in directory: URL) throws -> URL {
    let file = directory.appendingPathComponent("raw.\(codec)")
    let encoder =
      codec == "h264"
      ? ["-c:v", "libx264", "-bf", "3", "-g", "50", "-f", "h264"]
      : ["-c:v", "libx265", "-x265-params", "bframes=4:keyint=50:sao=0:log-level=error", "-f", "hevc"]
    _ = try run(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4", "-pix_fmt", "yuv420p"]
        + encoder + [file.path])
    return file
  }

  /// ffmpeg's hashes of a file's pictures, in the order they are shown.
  static func pictureHashes(_ file: URL) throws -> [String] {
    try run("/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-map", "0:v", "-f", "framemd5", "-"])
      .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last ?? "") }
  }

  /// Exports `range` of a video-only `file` through ``ExportJob`` over a ``MediaFileSource``.
  static func export(_ file: URL, _ range: MediaRange, to output: URL, cut: ExportJob.Cut) throws -> ExportResult {
    let job = try ExportJob(
      request: .init(range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: nil, output: output, cut: cut),
      packets: MediaFileSource(path: file.path), completion: { _ in })
    return try job.resultWithinDeadline()
  }

  @Test(
    "packets leave timed: shown a frame apart from 0, decoded in order and never after they are shown",
    arguments: ["h264", "h265"])
  func packetsAreTimed(_ codec: String) throws {
    let directory = try TemporaryDirectory()
    let file = try Self.makeRawStream(codec, in: directory.url)
    let info = try MediaFileSource.probe(path: file.path)
    #expect(info.video?.hasBFrames == true && info.video?.packets == 100)
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<EncodedPacket>()
    pipeline.connect(MediaFileSource(path: file.path), to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    let packets = sink.items
    #expect(packets.count == 100)
    let origin = try #require(packets.map(\.time).min())
    let shown = try packets.map { try ($0.time - origin).microseconds }.sorted()
    #expect(shown == (0..<100).map { Int64($0) * 40_000 }, "\(codec): every picture has a time of its own")
    // Reordered: some packet is shown before one decoded earlier.
    #expect(zip(packets, packets.dropFirst()).contains { $1.time < $0.time }, "\(codec)")
    #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.decodeTime > $0.decodeTime }, "\(codec)")
    #expect(packets.allSatisfy { $0.decodeTime <= $0.time }, "\(codec)")
    // A flush reads it again the same way.
    let first = packets.map { "\($0.time) \($0.decodeTime) \($0.data.count)" }
    sink.reset()
    pipeline.flush()
    executor.runUntilIdle()
    #expect(sink.items.map { "\($0.time) \($0.decodeTime) \($0.data.count)" } == first, "\(codec) after a flush")
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test(
    "exported whole and cut exactly, the file shows the stream's pictures in ffmpeg's order",
    arguments: ["h264", "h265"])
  func exports(_ codec: String) throws {
    let directory = try TemporaryDirectory()
    let file = try Self.makeRawStream(codec, in: directory.url)
    let pictures = try Self.pictureHashes(file)
    #expect(pictures.count == 100)
    let video = try #require(try MediaFileSource.probe(path: file.path).video)
    let whole = directory.url.appendingPathComponent("whole.mp4")
    let result = try Self.export(file, video.range, to: whole, cut: .keyframe)
    #expect(result.code == .ok && result.report.complete, "\(codec): \(result.message ?? "") \(result.report.gaps)")
    #expect(try Self.pictureHashes(whole) == pictures, "\(codec): the whole stream, picture by picture")
    #expect(try qtdemuxVideoBuffers(whole).count == 100, "\(codec): qtdemux")

    // 1.32 s to 3.08 s: the edge is re-encoded to the keyframe at 2 s, the rest copied as it was.
    let cut = directory.url.appendingPathComponent("cut.mp4")
    let start = try video.range.start + .microseconds(1_320_000)
    let range = MediaRange(start: start, end: try video.range.start + .microseconds(3_080_000))
    let exact = try Self.export(file, range, to: cut, cut: .exact)
    #expect(exact.code == .ok, "\(codec): \(exact.message ?? "")")
    #expect(exact.report.segments.first?.sourceRange.startMs == range.start.milliseconds, "\(codec)")
    let edge = try Self.pictureHashes(cut)
    #expect(edge.count >= 44, "\(codec): \(edge.count) pictures for 1.76 s")
    // Pictures 50 (the keyframe at 2 s) to 76 are copied: the same pixels as ffmpeg's decode of the raw stream.
    #expect(Array(edge.dropFirst(17).prefix(27)) == Array(pictures[50..<77]), "\(codec): the copied pictures")
    let errors = try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", cut.path, "-f", "null", "-"])
    #expect(errors.isEmpty, "\(codec): \(errors)")
    try MediaFileExportTests.expectSampleEntryDescribesEveryPicture(cut, codec: codec, directory.url, codec)
  }

  @Test("a raw H.265 stream cut at an open group's CRA: the leading pictures no decoder shows do not shift the rest")
  func leadingPicturesDropped() throws {
    let directory = try TemporaryDirectory()
    let mp4 = directory.url.appendingPathComponent("open.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "6", "-c:v", "libx265",
        "-x265-params", "bframes=4:keyint=50:log-level=error", mp4.path,
      ])
    // Cut at 2.1 s: the stream starts at the CRA of 2 s, whose leading (RASL) pictures refer to the
    // group before it — decoders drop them.
    let raw = directory.url.appendingPathComponent("open.h265")
    _ = try run(
      "/usr/bin/ffmpeg", ["-v", "error", "-y", "-ss", "2.1", "-i", mp4.path, "-c", "copy", "-f", "hevc", raw.path])
    let pictures = try Self.pictureHashes(raw)
    let video = try #require(try MediaFileSource.probe(path: raw.path).video)
    #expect(video.packets > pictures.count, "some packets are pictures no decoder shows")
    let output = directory.url.appendingPathComponent("out.mp4")
    let result = try Self.export(raw, video.range, to: output, cut: .keyframe)
    #expect(result.code == .ok, "\(result.message ?? "")")
    #expect(try Self.pictureHashes(output) == pictures, "the shown pictures, in ffmpeg's order")
  }
}
