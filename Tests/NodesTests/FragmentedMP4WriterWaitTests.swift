import Foundation
import MediaSynthesis
import MediaTestSupport
import PipelineGraph
import PipelineTestKit
import Testing

@testable import Nodes

/// How long `FragmentedMP4Writer` waits for a declared track's first packet before it creates the file
/// without it (manual executor, virtual clock): a live track's wait, and a file's.
@Suite("Fragmented MP4 writer: waiting for a declared track")
struct FragmentedMP4WriterWaitTests {
  /// A sound track the packets never bring.
  private static let absentSound = TrackID(.audio, channel: 9)

  /// 14 s of synthetic H.264 pictures, demuxed.
  private static func pictures() throws -> [EncodedPacket] {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock(freeRunning: true))
    let demuxer = SegmentDemuxer()
    let verifier = try SegmentVerifier()
    let sink = CollectingSink<EncodedPacket>()
    pipeline.connect(SyntheticSource(options: smallOptions(seconds: 14)), to: verifier)
    pipeline.connect(verifier, to: demuxer)
    pipeline.connect(demuxer, to: sink)
    _ = try pipeline.runToCompletion()
    let video = sink.items.filter { $0.track.kind == .video }
    try #require(video.first?.isKeyframe == true && video.count > 300, "\(video.count) pictures")
    return video
  }

  /// A writer of the pictures' track and ``absentSound`` waiting `trackWait`, in a harness.
  private static func harness(
    _ directory: TemporaryDirectory, video: TrackID, trackWait: MediaDuration
  ) throws -> (NodeHarness<FragmentedMP4Writer>, URL) {
    let url = directory.url.appendingPathComponent("rec.mp4")
    let writer = try FragmentedMP4Writer(
      destination: url, videoTrack: video, audioTrack: absentSound, trackWait: trackWait)
    return (try NodeHarness(writer), url)
  }

  /// The pictures starting before `seconds` from the first one's time, and the rest.
  private static func split(_ packets: [EncodedPacket], at seconds: Int64) throws -> ([EncodedPacket], [EncodedPacket])
  {
    let limit = try packets[0].time + .microseconds(seconds * 1_000_000)
    return (packets.filter { $0.time < limit }, packets.filter { $0.time >= limit })
  }

  @Test("a live sound that never comes: the file is made after 10 s of picture, not before, with the picture alone")
  func aLiveTrackIsWaitedForTenSeconds() throws {
    let packets = try Self.pictures()
    let directory = try TemporaryDirectory()
    let (harness, url) = try Self.harness(
      directory, video: packets[0].track, trackWait: FragmentedMP4Writer.liveTrackWait)
    let (before, after) = try Self.split(packets, at: 10)
    harness.push(contentsOf: before)
    harness.runUntilIdle()
    #expect(!FileManager.default.fileExists(atPath: url.path), "made before 10 s of picture")
    #expect(harness.node.written.video == 0)
    harness.push(contentsOf: after)
    harness.runUntilIdle()
    #expect(FileManager.default.fileExists(atPath: url.path), "not made after 10 s of picture")
    #expect(harness.node.written == (packets.count, 0), "\(harness.node.written)")
    #expect(harness.reportedFailures.isEmpty, "\(harness.reportedFailures)")
  }

  @Test(
    "a file's sound is waited for through its whole picture; a sound's end is no sign (its encoder holds its last frames): the stream's end makes the file with what came"
  )
  func aFileTrackIsWaitedForUntilTheEnd() throws {
    let packets = try Self.pictures()
    let directory = try TemporaryDirectory()
    let (harness, url) = try Self.harness(
      directory, video: packets[0].track, trackWait: FragmentedMP4Writer.fileTrackWait)
    harness.push(contentsOf: packets)
    harness.push(event: .custom(TrackEnded(track: TrackID(.audio, channel: 4))))
    harness.runUntilIdle()
    #expect(!FileManager.default.fileExists(atPath: url.path), "a file's sound was given up after 14 s of picture")
    harness.endInput()
    harness.runUntilIdle()
    #expect(FileManager.default.fileExists(atPath: url.path), "the stream ended and the file still waits")
    #expect(harness.node.written == (packets.count, 0), "\(harness.node.written)")
    // The last fragment is written on the pipeline's workers.
    for _ in 0..<100 where !harness.node.isFinished {
      _ = harness.executor.waitForWork(timeout: .seconds(1))
      harness.runUntilIdle()
    }
    #expect(harness.node.isFinished)
    #expect(harness.reportedFailures.isEmpty, "\(harness.reportedFailures)")
  }
}
