import Dispatch
import PipelineGraph
import PipelineTestKit
import Testing

/// Records items from another thread; the test reads them after `onEndOfStream`.
final class SharedSink: Node, @unchecked Sendable {
  typealias Input = Int
  typealias Output = Never
  // Written on the sink's executor only; read by the test after the end-of-stream handshake.
  var items: [Int] = []
  var finishes = 0
  func process(_ input: Int, context: NodeContext<Never>) throws { items.append(input) }
  func finish(context: NodeContext<Never>) throws { finishes += 1 }
}

@Suite("Thread boundaries")
struct ThreadBoundaryTests {
  @Test("every item crosses two thread boundaries, in order, with backpressure")
  func itemsCrossInOrder() throws {
    let producerThread = ThreadExecutor(name: "test.producer")
    let middleThread = ThreadExecutor(name: "test.middle")
    let consumerThread = ThreadExecutor(name: "test.consumer")
    defer {
      producerThread.shutdown()
      middleThread.shutdown()
      consumerThread.shutdown()
    }
    let pipeline = Pipeline(executor: producerThread, clock: MonotonicClock())
    let total = 200_000
    let source = CountingSource(count: total)
    let middle = PassThrough<Int>()
    let sink = SharedSink()
    pipeline.add(source)
    pipeline.add(middle, on: middleThread)
    pipeline.add(sink, on: consumerThread)
    pipeline.connect(source, to: middle, limits: EdgeLimits(items: 32), threadBoundary: true)
    pipeline.connect(middle, to: sink, limits: EdgeLimits(items: 8), threadBoundary: true)
    let outcome = try pipeline.runToCompletion()
    #expect(outcome.reachedEndOfStream && outcome.failures.isEmpty)
    #expect(sink.items.count == total)
    #expect(sink.items == Array(0..<total))
    #expect(sink.finishes == 1)
    let edges = pipeline.statistics().edges
    #expect(edges[0].highWaterItems <= 32)
    #expect(edges[1].highWaterItems <= 8)
  }

  @Test("an edge between executors must be declared a thread boundary")
  func undeclaredBoundaryIsRejected() {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    let source = CountingSource(count: 1)
    let sink = CollectingSink<Int>()
    pipeline.add(sink, on: ManualExecutor())
    pipeline.connect(source, to: sink)
    #expect(throws: GraphError.undeclaredThreadBoundary(from: "CountingSource", to: "CollectingSink")) {
      try pipeline.start()
    }
  }
}
