import PipelineGraph
import PipelineTestKit
import Testing

/// Emits `fanOut` items per input (input × 1000 + k), one per step; `finish` leaves a last burst.
final class Expander: SteppingNode, @unchecked Sendable {
  typealias Input = Int
  typealias Output = Int
  let fanOut: Int
  private var pending: [Int] = []
  private var head = 0
  var largestOutputDepthSeen = 0
  init(fanOut: Int) { self.fanOut = fanOut }
  func process(_ input: Int, context: NodeContext<Int>) throws {
    pending = (0..<fanOut).map { input * 1000 + $0 }
    head = 0
  }
  var hasPendingWork: Bool { head < pending.count }
  func step(context: NodeContext<Int>) throws {
    context.emit(pending[head])
    head += 1
  }
  func finish(context: NodeContext<Int>) throws {
    pending = (0..<fanOut).map { -1000 - $0 }
    head = 0
  }
}

@Suite("Nodes that emit many items per input")
struct SteppingNodeTests {
  @Test("a stepping node keeps a thread-boundary edge within its bound, in order, finish's burst included")
  func boundsHoldAcrossThreads() throws {
    let producer = ThreadExecutor(name: "test.expander")
    let consumer = ThreadExecutor(name: "test.sink")
    defer {
      producer.shutdown()
      consumer.shutdown()
    }
    let pipeline = Pipeline(executor: producer, clock: MonotonicClock())
    let source = CountingSource(count: 200)
    let expander = Expander(fanOut: 300)
    let sink = SharedSink()
    pipeline.add(sink, on: consumer)
    pipeline.connect(source, to: expander, limits: EdgeLimits(items: 2))
    pipeline.connect(expander, to: sink, limits: EdgeLimits(items: 5), threadBoundary: true)
    let outcome = try pipeline.runToCompletion()
    #expect(outcome.reachedEndOfStream && outcome.failures.isEmpty)
    let expected = (0..<200).flatMap { input in (0..<300).map { input * 1000 + $0 } } + (0..<300).map { -1000 - $0 }
    #expect(sink.items == expected)
    #expect(sink.finishes == 1)
    let edge = pipeline.statistics().edges[1]
    #expect(edge.highWaterItems <= 5)
    #expect(edge.itemsPassed == expected.count + 1)  // and the end of stream
  }

  @Test("on a manual executor the steps run as the consumer makes room: the edge never exceeds 3")
  func boundsHoldOnOneExecutor() throws {
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let pipeline = Pipeline(executor: executor, clock: clock)
    let source = CountingSource(count: 3)
    let expander = Expander(fanOut: 50)
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: expander)
    pipeline.connect(expander, to: sink, limits: EdgeLimits(items: 3))
    let outcome = try pipeline.runToCompletion()
    #expect(outcome.reachedEndOfStream)
    #expect(sink.items.count == 200)
    #expect(pipeline.statistics().edges[1].highWaterItems <= 3)
  }
}

@Suite("Running to completion")
struct RunToCompletionTests {
  /// A source that waits for a completion nobody ever sends.
  final class ForeverWaiting: SourceNode {
    typealias Output = Int
    func produce(context: NodeContext<Int>) throws -> ProduceResult { .waiting }
  }

  @Test("a graph on manual executors that can make no progress is reported stalled, then stopped")
  func stalled() throws {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    pipeline.connect(ForeverWaiting(), to: CollectingSink<Int>())
    #expect(throws: PipelineRunError.stalled) { try pipeline.runToCompletion(patience: .milliseconds(1)) }
  }

  @Test("failures are collected and the handler set before still decides")
  func failuresCollected() throws {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    let failing = MapNode<Int, Int>(name: "failing") { value in
      if value == 2 { throw GraphError.empty }
      return value
    }
    let sink = CollectingSink<Int>()
    pipeline.connect(CountingSource(count: 5), to: failing)
    pipeline.connect(failing, to: sink)
    pipeline.errorHandler = { _ in .resume }
    let outcome = try pipeline.runToCompletion()
    #expect(outcome.reachedEndOfStream)
    #expect(outcome.failures.map(\.nodeName) == ["failing"])
    #expect(sink.items == [0, 1, 3, 4])
  }

  @Test("the async form awaits the end of a graph on threads")
  func asyncRun() async throws {
    let executor = ThreadExecutor(name: "test.async")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: MonotonicClock())
    let sink = SharedSink()
    pipeline.connect(CountingSource(count: 10_000), to: sink)
    let outcome = try await pipeline.run()
    #expect(outcome.reachedEndOfStream)
    #expect(sink.items.count == 10_000)
  }
}
