import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Validation and introspection")
struct ValidationTests {
  @Test("an empty graph cannot start")
  func empty() {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    #expect(throws: GraphError.empty) { try pipeline.start() }
  }

  @Test("a cycle is found and named")
  func cycle() {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    let source = CountingSource(count: 1)
    let a = PassThrough<Int>(name: "a")
    let b = PassThrough<Int>(name: "b")
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: a)
    pipeline.connect(a, to: b)
    pipeline.connect(b, to: a)
    pipeline.connect(b, to: sink)
    #expect(throws: GraphError.cycle(["a", "b", "CollectingSink"])) { try pipeline.start() }
  }

  @Test("dangling inputs and outputs are rejected")
  func dangling() {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    let source = CountingSource(count: 1)
    let middle = PassThrough<Int>(name: "middle")
    pipeline.connect(source, to: middle)
    #expect(throws: GraphError.unconnectedOutput("middle")) { try pipeline.start() }

    let other = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    other.add(CollectingSink<Int>(name: "lonely"))
    #expect(throws: GraphError.unconnectedInput("lonely")) { try other.start() }
  }

  @Test("a pipeline starts only once")
  func startsOnce() throws {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    pipeline.connect(CountingSource(count: 1), to: CollectingSink<Int>())
    try pipeline.start()
    #expect(throws: GraphError.alreadyStarted) { try pipeline.start() }
  }

  @Test("dot() names every node, type and edge bound; thread boundaries are dashed")
  func dot() {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock())
    let source = CountingSource(count: 1)
    let sink = CollectingSink<Int>(name: "out")
    pipeline.add(sink, on: ManualExecutor())
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 7, bytes: 100), threadBoundary: true)
    let dot = pipeline.dot()
    #expect(dot.hasPrefix("digraph pipeline {"))
    // The sink was added first, so it is n0.
    #expect(dot.contains("n0 [label=\"out\\nCollectingSink<Int>\"]"))
    #expect(dot.contains("n1 [label=\"CountingSource\\nCountingSource\"]"))
    #expect(dot.contains("n1 -> n0 [label=\"Int\\n7 items, 100 B\", style=dashed]"))
    #expect(dot.contains("subgraph cluster_1"))
  }

  @Test("statistics count items in and out, events and queue high-water marks")
  func statistics() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>([.item(1), .event(.custom(Tag(value: "x"))), .item(2)])
    let middle = PassThrough<Int>(name: "middle")
    let sink = CollectingSink<Int>(name: "sink")
    pipeline.connect(source, to: middle)
    pipeline.connect(middle, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    let statistics = pipeline.statistics()
    let node = try #require(statistics.node(named: "middle"))
    #expect(node.itemsIn == 2)
    #expect(node.itemsOut == 2)
    #expect(node.eventsIn == 1)
    #expect(node.inputHighWater >= 1)
    #expect(statistics.node(named: "sink")?.itemsIn == 2)
    #expect(statistics.edges.map(\.itemsPassed) == [4, 4])
  }
}
