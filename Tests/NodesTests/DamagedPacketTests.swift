import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// A file with damaged packets decoded through the graph, as `record --input` and `play --input` decode it:
/// each damaged packet costs its own frames, as ffmpeg decodes the same file — not the frames decoded
/// with it, nor what the decoder still held.
@Suite struct DamagedPacketTests {
  /// Frames per stream of `file` as ffmpeg decodes it (`ffprobe -count_frames`).
  static func judged(_ file: URL) throws -> [Int] {
    try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file.path]
    ).split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
  }

  @Test(
    "damaged packets in a file cost their own frames only, as ffmpeg decodes it, with one and with several decoding threads",
    arguments: [1, 4])
  func damagedPacketsCostTheirOwnFrames(threads: Int) throws {
    let directory = try TemporaryDirectory("damaged-packets")
    let source = directory.url.appendingPathComponent("source.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=48000:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "3", "-g",
        "50", "-pix_fmt", "yuv420p", "-c:a", "aac", source.path,
      ])
    // The second half of four pictures' and five sound frames' packets overwritten with noise (where
    // ffprobe says they lie): libavcodec refuses the sound's, conceals the pictures'.
    var bytes = [UInt8](try Data(contentsOf: source))
    var state: UInt64 = 3
    for (stream, packets) in [("v", 30..<34), ("a", 60..<65)] {
      let placed = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pos,size", "-of", "csv=p=0", source.path]
      ).split(separator: "\n").compactMap { line -> (size: Int, position: Int)? in
        let fields = line.split(separator: ",").compactMap { Int($0) }
        return fields.count == 2 ? (fields[0], fields[1]) : nil
      }
      try #require(placed.count > packets.upperBound)
      for packet in placed[packets] {
        for index in packet.position + packet.size / 2..<packet.position + packet.size {
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
      }
    }
    let damaged = directory.url.appendingPathComponent("damaged.mp4")
    try Data(bytes).write(to: damaged)

    let whole = try decodeFile(source, threads: threads)
    let hurt = try decodeFile(damaged, threads: threads)
    let judgedWhole = try Self.judged(source)
    let judgedHurt = try Self.judged(damaged)
    try #require(judgedWhole.count == 2 && judgedHurt.count == 2, "\(judgedWhole) \(judgedHurt)")
    #expect(whole.damaged == 0)
    #expect(hurt.damaged > 0, "no packet was refused: the noise missed")
    // As many frames lost as ffmpeg loses, track by track.
    let counts = { (run: (video: [DecodedFrame], audio: [DecodedFrame], changes: Int, damaged: Int)) in
      "\(run.video.count) + \(run.audio.count) frames, \(run.damaged) damaged"
    }
    #expect(whole.video.count == judgedWhole[0], "\(counts(whole))")
    #expect(
      whole.video.count - hurt.video.count == judgedWhole[0] - judgedHurt[0], "\(counts(hurt)) vs ffmpeg \(judgedHurt)")
    #expect(
      whole.audio.count - hurt.audio.count == judgedWhole[1] - judgedHurt[1], "\(counts(hurt)) vs ffmpeg \(judgedHurt)")
  }
}

extension DamagedPacketTests {
  /// The packets of `file`'s first video track, as `MediaFileSource` reads them.
  static func videoPackets(of file: URL) throws -> [EncodedPacket] {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<EncodedPacket>()
    pipeline.connect(MediaFileSource(path: file.path), to: sink)
    let failures = try pipeline.runToCompletion().failures
    try #require(failures.isEmpty, "\(failures)")
    return sink.items.filter { $0.track == TrackID(.video, channel: 0) }
  }

  @Test(
    "a gap after damaged packets still in a frame-threaded decoder goes on downstream, and decoding resumes after it"
  )
  func aGapAfterDamagedPacketsIsNotLost() throws {
    let directory = try TemporaryDirectory("damaged-drain")
    let file = directory.url.appendingPathComponent("hevc.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=2", "-c:v", "libx265", "-preset",
        "ultrafast", "-x265-params", "log-level=none:keyint=25:bframes=0", "-pix_fmt", "yuv420p", file.path,
      ])
    let packets = try Self.videoPackets(of: file)
    try #require(packets.count == 50 && packets[25].isKeyframe)
    // Four frame threads: the last packets before the gap are still being decoded when it comes, and
    // their failure is what the drain at the gap reads.
    let harness = try NodeHarness(try FrameDecoder(track: TrackID(.video, channel: 0), threads: 4))
    var state: UInt64 = 5
    let noise = { (packet: EncodedPacket) -> EncodedPacket in
      let bytes = (0..<packet.data.count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
      }
      return EncodedPacket(
        track: packet.track, format: packet.format, time: packet.time, decodeTime: packet.decodeTime,
        duration: packet.duration, isKeyframe: packet.isKeyframe, data: Data(bytes))
    }
    harness.push(contentsOf: Array(packets[0..<22]) + packets[22..<25].map(noise))
    let gap = RecordingGap(
      range: MediaRange(start: packets[25].time, end: packets[25].time), tracks: [TrackID(.video, channel: 0)],
      reasons: [.integrityFailed])
    harness.push(event: .gap(gap))
    harness.push(contentsOf: Array(packets[25...]))
    harness.endInput()
    harness.runUntilIdle()
    #expect(!harness.reportedFailures.isEmpty, "the noise was decoded without a failure: the test proves nothing")
    let gaps = harness.outputEvents.compactMap { event -> RecordingGap? in
      if case .gap(let carried as RecordingGap) = event { return carried }
      return nil
    }
    #expect(gaps == [gap], "\(harness.outputEvents)")
    // Every picture before the noise, and every one after the gap.
    let times = Set(harness.outputItems.map(\.time))
    #expect(packets[0..<22].allSatisfy { times.contains($0.time) }, "\(times.count) frames")
    #expect(packets[25...].allSatisfy { times.contains($0.time) }, "\(times.count) frames")
  }
}
