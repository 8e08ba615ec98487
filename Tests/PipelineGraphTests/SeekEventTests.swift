import PipelineGraph
import PipelineTestKit
import Testing

/// A seek as an in-band event (GStreamer's): it goes against the flow from a sink to the source, which
/// flushes the pipeline to its target, once per request.
@Suite("Seek events")
struct SeekEventTests {
  /// `source → pass → sink` and `source → other`: two sinks, one source.
  private func graph() throws -> (
    Pipeline, ManualExecutor, ScriptedSource<Int>, CollectingSink<Int>, CollectingSink<Int>
  ) {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>(name: "source", [.item(1), .item(2)], endsAfterScript: false)
    let pass = PassThrough<Int>(name: "pass")
    let sink = CollectingSink<Int>()
    let other = CollectingSink<Int>(name: "other")
    pipeline.connect(source, to: pass)
    pipeline.connect(pass, to: sink)
    pipeline.connect(source, to: other)
    return (pipeline, executor, source, sink, other)
  }

  @Test("a seek a sink sends reaches the source, which flushes the pipeline to its target, once however many paths")
  func aSeekFromASinkFlushesOnce() throws {
    let (pipeline, executor, source, sink, other) = try graph()
    try pipeline.start()
    executor.runUntilIdle()
    let request = SeekRequest(to: MediaTime(microseconds: 5_000_000))
    sink.sendUpstream(.seek(request))
    other.sendUpstream(.seek(request))
    executor.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 5_000_000)])
    #expect(sink.flushCount == 1 && other.flushCount == 1)
    #expect(source.upstreamEvents.map(\.description) == ["seek(5000ms)", "seek(5000ms)"])
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test("Pipeline.seek(to:) sends from every sink; each request flushes once; an older one after a newer is dropped")
  func theLatestSeekWins() throws {
    let (pipeline, executor, source, sink, _) = try graph()
    try pipeline.start()
    executor.runUntilIdle()
    pipeline.seek(to: MediaTime(microseconds: 1_000_000))
    pipeline.seek(to: MediaTime(microseconds: 2_000_000))
    executor.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 1_000_000), MediaTime(microseconds: 2_000_000)])
    // Made in this order, arriving in the other: the older one is about a position already left.
    let older = SeekRequest(to: MediaTime(microseconds: 3_000_000))
    let newer = SeekRequest(to: MediaTime(microseconds: 4_000_000))
    sink.sendUpstream(.seek(newer))
    sink.sendUpstream(.seek(older))
    executor.runUntilIdle()
    #expect(source.flushTargets.last == MediaTime(microseconds: 4_000_000))
    #expect(source.flushTargets.count == 3)
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test("a node that handles the seek itself keeps it from the source: nothing is flushed")
  func aNodeOnTheWayCanTakeIt() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>(items: [1])
    let stop = UpstreamStop()
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: stop)
    pipeline.connect(stop, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    pipeline.seek(to: MediaTime(microseconds: 7_000))
    executor.runUntilIdle()
    #expect(stop.taken == ["seek(7ms)"])
    #expect(source.flushCount == 0 && source.upstreamEvents.isEmpty)
  }

  @Test("before the start a seek is a flush that takes effect at the start")
  func beforeTheStart() throws {
    let (pipeline, executor, source, _, _) = try graph()
    pipeline.seek(to: MediaTime(microseconds: 9_000_000))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 9_000_000)])
    pipeline.stop()
    executor.runUntilIdle()
  }

  /// `source` on one executor, `sink` on another.
  private func acrossExecutors() throws -> (
    Pipeline, ManualExecutor, ManualExecutor, ScriptedSource<Int>, CollectingSink<Int>
  ) {
    let producerSide = ManualExecutor()
    let consumerSide = ManualExecutor()
    let pipeline = Pipeline(executor: producerSide, clock: VirtualClock())
    let source = ScriptedSource<Int>(name: "source", [.item(1)], endsAfterScript: false)
    let sink = CollectingSink<Int>()
    pipeline.add(source)
    pipeline.add(sink, on: consumerSide)
    pipeline.connect(source, to: sink, threadBoundary: true)
    try pipeline.start()
    producerSide.runUntilIdle()
    consumerSide.runUntilIdle()
    return (pipeline, producerSide, consumerSide, source, sink)
  }

  @Test("across executors, a seek from a sink that has not reached the last flush yet still counts: the latest wins")
  func aSeekFromASinkBehindAFlushIsKept() throws {
    let (pipeline, producerSide, consumerSide, source, sink) = try acrossExecutors()
    sink.sendUpstream(.seek(SeekRequest(to: MediaTime(microseconds: 1_000))))
    producerSide.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 1_000)])
    // The sink has not run its flush yet: its next seek is newer all the same.
    sink.sendUpstream(.seek(SeekRequest(to: MediaTime(microseconds: 2_000))))
    producerSide.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 1_000), MediaTime(microseconds: 2_000)])
    pipeline.stop()
    producerSide.runUntilIdle()
    consumerSide.runUntilIdle()
  }

  @Test("a flush made while a seek request is on its way is newer: the request is dropped when it arrives")
  func aFlushOvertakesASeekOnItsWay() throws {
    let (pipeline, producerSide, consumerSide, source, sink) = try acrossExecutors()
    sink.sendUpstream(.seek(SeekRequest(to: MediaTime(microseconds: 3_000))))
    pipeline.flush(seekingTo: MediaTime(microseconds: 4_000))
    producerSide.runUntilIdle()
    #expect(source.flushTargets == [MediaTime(microseconds: 4_000)])
    pipeline.stop()
    producerSide.runUntilIdle()
    consumerSide.runUntilIdle()
  }
}
