import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Backpressure")
struct BackpressureTests {
  @Test("a fast source feeding a slow sink for 1,000,000 items keeps every queue within its bound")
  func millionItemsStayBounded() throws {
    let executor = ManualExecutor()
    let clock = VirtualClock(freeRunning: true)
    let pipeline = Pipeline(executor: executor, clock: clock)
    let total = 1_000_000
    let source = CountingSource(count: total)
    let first = PassThrough<Int>(name: "first")
    let second = PassThrough<Int>(name: "second")
    let sink = PacedSink<Int>(interval: .microseconds(1))
    let limits = EdgeLimits(items: 16)
    pipeline.connect(source, to: first, limits: limits)
    pipeline.connect(first, to: second, limits: limits)
    pipeline.connect(second, to: sink, limits: limits)
    // Between the source and the sink there are three edges; one `produce` call emits one item, and a
    // batch stops as soon as an edge is full, so at most 3 × 16 items are in flight.
    var worstInFlight = 0
    sink.onConsume = { consumed in
      worstInFlight = max(worstInFlight, source.emitted - consumed)
    }
    try pipeline.start()
    executor.runUntilIdle()

    #expect(sink.consumed == total)
    #expect(sink.finished)
    #expect(worstInFlight <= 3 * 16)
    #expect(worstInFlight >= 16, "the source did run ahead while the sink was busy")
    let statistics = pipeline.statistics()
    for edge in statistics.edges {
      #expect(edge.highWaterItems <= 16, "edge \(edge.from) → \(edge.to) held \(edge.highWaterItems)")
    }
    // The sink took one item per microsecond of virtual time.
    #expect(clock.now.microseconds >= Int64(total - 1))
  }

  @Test("byte bounds stop the producer before the item bound")
  func byteBoundsStopTheProducer() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let chunks = (0..<100).map { Chunk(index: $0, byteCount: 1000, duration: .microseconds(40_000)) }
    let source = ScriptedSource(items: chunks)
    let sink = PacedSink<Chunk>(interval: .seconds(1))
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 1000, bytes: 5000))
    try pipeline.start()
    executor.runUntilIdle()
    let edge = try #require(pipeline.statistics().edges.first)
    #expect(edge.highWaterBytes <= 5000)
    #expect(edge.highWaterItems == 5)
    #expect(sink.consumed == 1)
  }

  @Test("duration bounds stop the producer")
  func durationBoundsStopTheProducer() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let chunks = (0..<100).map { Chunk(index: $0, byteCount: 1, duration: .microseconds(40_000)) }
    let source = ScriptedSource(items: chunks)
    let sink = PacedSink<Chunk>(interval: .seconds(1))
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 1000, duration: .microseconds(200_000)))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(pipeline.statistics().edges[0].highWaterItems == 5)
  }

  @Test("a source is asked to produce only while its output has room")
  func sourcesProduceOnDemand() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 1000)
    let sink = PacedSink<Int>(interval: .seconds(1))
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 4))
    try pipeline.start()
    executor.runUntilIdle()
    // One item taken by the sink, four queued.
    #expect(source.emitted == 5)
  }
}
