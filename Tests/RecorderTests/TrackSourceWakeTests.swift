import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// `TrackSource` on its graph's executor (manual executor, virtual clock): a track pushed faster than the
/// graph takes it keeps one wake-up queued, not one per frame — the executor serves its jobs in order,
/// and a recorder's sound waited behind its picture's hundreds of wake-ups until its file gave up on it.
@Suite("Track source wake-ups")
struct TrackSourceWakeTests {
  @Test("a track pushed 200 frames queues one wake-up; the run takes all of them; a later push queues one again")
  func oneWakeUpIsQueuedAtATime() throws {
    let track = MediaTrack(id: TrackID(.audio, channel: 0))
    let source = TrackSource(track: track, capacity: 1_000)
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<DecodedFrame>()
    pipeline.connect(source, to: sink)
    try pipeline.start()
    defer { pipeline.stop() }
    executor.runUntilIdle()
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
}
