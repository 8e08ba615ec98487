import PipelineGraph
import PipelineTestKit
import Testing

/// A source that requests its data from a "worker" and emits it when the completion arrives.
final class AsyncSource: SourceNode {
  typealias Output = String
  var pending: [Completion<String>] = []
  var inFlight = false
  var position = 0
  var repositionedTo: Int?

  func produce(context: NodeContext<String>) throws -> ProduceResult {
    if inFlight { return .waiting }
    inFlight = true
    let requested = position
    pending.append(
      context.makeCompletion { [unowned self] (value: String) in
        inFlight = false
        position = requested + 1
        context.emit(value)
      })
    return .waiting
  }

  func flush(context: NodeContext<String>) {
    inFlight = false
    position = repositionedTo ?? 0
  }
}

@Suite("Flush and seek")
struct FlushTests {
  @Test("a flush drops queued items and the nodes' state, and the source restarts")
  func flushDropsQueuedItems() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 100)
    let middle = PassThrough<Int>()
    let sink = PacedSink<Int>(interval: .seconds(1))
    let collector = CollectingSink<Int>()
    pipeline.connect(source, to: middle, limits: EdgeLimits(items: 8))
    pipeline.connect(middle, to: sink, limits: EdgeLimits(items: 8))
    pipeline.connect(source, to: collector, limits: EdgeLimits(items: 1000))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(sink.consumed == 1)
    let queuedBefore = pipeline.statistics().edges.map(\.depth).reduce(0, +)
    #expect(queuedBefore > 0)

    let generation = pipeline.flush()
    #expect(generation == 1)
    executor.runUntilIdle()
    #expect(collector.flushCount == 1)
    // The collector saw the in-band flush marker, then the source's restart from 0.
    let afterFlush = collector.received.drop { entry in
      if case .flush(1) = entry.event { return false }
      return true
    }
    #expect(afterFlush.first?.event.map { "\($0)" } == "flush(1)")
    #expect(afterFlush.dropFirst().first?.item == 0)
  }

  @Test("a completion made before a flush is dropped when it arrives afterwards")
  func lateCompletionsAreDropped() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = AsyncSource()
    let sink = CollectingSink<String>()
    pipeline.connect(source, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    #expect(source.pending.count == 1)
    let stale = source.pending[0]

    pipeline.flush()
    executor.runUntilIdle()
    #expect(source.pending.count == 2, "the source asked again after the flush")

    stale("old data")  // the worker finishes the request made before the seek
    executor.runUntilIdle()
    #expect(sink.items.isEmpty)

    source.pending[1]("new data")
    executor.runUntilIdle()
    #expect(sink.items == ["new data"])
  }

  @Test("a timer set before a flush does not fire after it")
  func staleTimersAreDropped() throws {
    final class TimerNode: Node {
      typealias Input = Int
      typealias Output = Int
      var fired: [Int] = []
      func process(_ input: Int, context: NodeContext<Int>) throws {
        context.scheduleTimer(after: .seconds(1)) { [unowned self] in fired.append(input) }
      }
    }
    let node = TimerNode()
    let harness = try NodeHarness(node)
    harness.push(1)
    harness.runUntilIdle()
    harness.flush()
    harness.push(2)
    harness.runUntilIdle()
    harness.advance(by: .seconds(2))
    #expect(node.fired == [2])
  }

  @Test("a seek's target reaches every node's flush; a flush made before the start takes effect at the start")
  func seekTargetsReachTheNodes() throws {
    final class TargetLog: Node {
      typealias Input = Int
      typealias Output = Int
      var targets: [MediaTime?] = []
      var generations: [Int] = []
      func process(_ input: Int, context: NodeContext<Int>) throws { context.emit(input) }
      func flush(context: NodeContext<Int>) {
        targets.append(context.seekTarget)
        generations.append(context.generation)
      }
    }
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 3)
    let log = TargetLog()
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: log)
    pipeline.connect(log, to: sink)
    let target = MediaTime(milliseconds: 1_700_000_004_000)
    #expect(pipeline.flush(seekingTo: target) == 1)
    #expect(log.targets.isEmpty, "nothing runs before the start")
    try pipeline.start()
    executor.runUntilIdle()
    #expect(log.targets == [target])
    #expect(log.generations == [1])
    // Everything the sink got belongs to generation 1, after its in-band marker.
    #expect(sink.events.first.map { "\($0)" } == "flush(1)")
    #expect(sink.items == [0, 1, 2])

    pipeline.flush()
    executor.runUntilIdle()
    #expect(log.targets == [target, nil], "a flush without a target says so")
    #expect(log.generations == [1, 2])
  }

  @Test("an end of stream of the generation before a flush does not count for the one after it")
  func endsOfAnOldGenerationDoNotCount() throws {
    /// Flushes its pipeline when it gets its first item, from inside the run: the other sink still ends
    /// in the old generation before the flush reaches the executor.
    final class FlushingSink: Node {
      typealias Input = Int
      typealias Output = Never
      unowned let pipeline: Pipeline
      var flushed = false
      init(pipeline: Pipeline) { self.pipeline = pipeline }
      func process(_ input: Int, context: NodeContext<Never>) throws {
        guard !flushed else { return }
        flushed = true
        pipeline.flush()
      }
    }
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 1)
    let flushing = FlushingSink(pipeline: pipeline)
    let other = CollectingSink<Int>()
    pipeline.connect(source, to: flushing)
    pipeline.connect(source, to: other)
    let ends = LockedArray<Int>()
    pipeline.onEndOfStream = { generation in ends.append(generation) }
    try pipeline.start()
    executor.runUntilIdle()
    // Both sinks ended twice (generations 0 and 1); only the second time is the stream's end.
    #expect(other.finishCount == 2)
    #expect(ends.values == [1])
  }

  @Test("a failure carries the flush generation of the node that raised it")
  func failuresCarryTheirGeneration() throws {
    final class FailOnce: Node {
      typealias Input = Int
      typealias Output = Never
      func process(_ input: Int, context: NodeContext<Never>) throws {
        if input == 1 { throw GraphError.empty }
      }
    }
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 2)
    pipeline.connect(source, to: FailOnce())
    let generations = LockedArray<Int>()
    pipeline.errorHandler = { failure in
      generations.append(failure.generation)
      return .resume
    }
    pipeline.flush()
    pipeline.flush()
    try pipeline.start()
    executor.runUntilIdle()
    #expect(generations.values == [2])
  }

  @Test("a pipeline stopped before it started never starts; a failure in start carries a pending flush's generation")
  func stoppedBeforeStartAndStartFailures() throws {
    final class FailsAtStart: Node {
      typealias Input = Int
      typealias Output = Never
      func start(context: NodeContext<Never>) throws { throw GraphError.empty }
      func process(_ input: Int, context: NodeContext<Never>) throws {}
    }
    let executor = ManualExecutor()
    let stopped = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<Int>()
    stopped.connect(CountingSource(count: 3), to: sink)
    stopped.stop()
    try stopped.start()
    executor.runUntilIdle()
    #expect(sink.items.isEmpty)

    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    pipeline.connect(CountingSource(count: 1), to: FailsAtStart())
    let generations = LockedArray<Int>()
    pipeline.errorHandler = { failure in
      generations.append(failure.generation)
      return .resume
    }
    pipeline.flush(seekingTo: MediaTime(milliseconds: 1_700_000_000_000))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(generations.values == [1])
  }
}
