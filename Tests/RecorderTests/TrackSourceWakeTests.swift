import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// `TrackSource` and `TrackFeed` on their graph's executor (manual executor, virtual clock): a track pushed
/// faster than the graph takes it keeps one wake-up queued, not one per frame — the executor serves its
/// jobs in order, and a recorder's sound waited behind its picture's hundreds of wake-ups until its file
/// gave up on it; and both wake after a flush (a wake-up made before it is dropped as stale).
@Suite("Track source and feed wake-ups")
struct TrackSourceWakeTests {
  /// `source → sink` on a manual executor, started and run until idle.
  static func started(_ source: TrackSource) throws -> (ManualExecutor, Pipeline, CollectingSink<DecodedFrame>) {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<DecodedFrame>()
    pipeline.connect(source, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    return (executor, pipeline, sink)
  }

  @Test("a track pushed 200 frames queues one wake-up; the run takes all of them; a later push queues one again")
  func oneWakeUpIsQueuedAtATime() throws {
    let track = MediaTrack(id: TrackID(.audio, channel: 0))
    let source = TrackSource(track: track, capacity: 1_000)
    let (executor, pipeline, sink) = try Self.started(source)
    defer { pipeline.stop() }
    let frame = { (index: Int) in
      DecodedFrame(
        track: track.id, time: MediaTime(microseconds: Int64(index) * 21_333), duration: .microseconds(21_333),
        frame: try RecorderFixtures.tone(first: index * 1024))
    }
    for index in 0..<200 { track.push(try frame(index)) }
    #expect(executor.pendingJobCount == 1, "\(executor.pendingJobCount) jobs queued for 200 frames")
    executor.runUntilIdle()
    #expect(sink.items.count == 200)
    track.push(try frame(200))
    #expect(executor.pendingJobCount == 1)
    executor.runUntilIdle()
    #expect(sink.items.map(\.time.microseconds) == (0...200).map { Int64($0) * 21_333 })
  }

  @Test("after a flush (a seek of its graph) the source still wakes for what the track brings")
  func aFlushKeepsTheWakeUp() throws {
    let track = MediaTrack(id: TrackID(.video, channel: 0))
    let source = TrackSource(track: track)
    let (executor, pipeline, sink) = try Self.started(source)
    defer { pipeline.stop() }
    let picture = try RecorderFixtures.picture(width: 16, height: 16, value: 100)
    let frame = { (index: Int) in
      DecodedFrame(
        track: track.id, time: MediaTime(microseconds: Int64(index) * 40_000), duration: .microseconds(40_000),
        frame: picture)
    }
    track.push(frame(0))
    executor.runUntilIdle()
    _ = pipeline.flush()
    executor.runUntilIdle()
    for index in 1...3 { track.push(frame(index)) }
    executor.runUntilIdle()
    #expect(sink.items.map(\.time.microseconds).suffix(3) == [40_000, 80_000, 120_000], "\(sink.items.map(\.time))")
  }

  @Test("a feed that waits for room after a flush resumes when the track has room again")
  func aFeedWaitsForRoomAfterAFlush() throws {
    let track = MediaTrack(id: TrackID(.video, channel: 0))
    let subscription = track.subscribe(capacity: 1) {}
    let harness = try NodeHarness(TrackFeed(track: track))
    harness.flush()
    let picture = try RecorderFixtures.picture(width: 16, height: 16, value: 100)
    for index in 0..<3 {
      harness.push(
        DecodedFrame(
          track: track.id, time: MediaTime(microseconds: Int64(index) * 40_000), duration: .microseconds(40_000),
          frame: picture))
    }
    var taken: [Int64] = []
    for _ in 0..<5 {
      harness.runUntilIdle()
      taken += subscription.take(upTo: 10).frames.map(\.time.microseconds)
    }
    #expect(taken == [0, 40_000, 80_000], "\(taken)")
  }
}
