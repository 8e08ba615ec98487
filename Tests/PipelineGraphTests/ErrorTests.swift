import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Errors")
struct ErrorTests {
  @Test("a node's error reaches the handler as thrown, with the node's identity")
  func errorsCarryNodeIdentity() throws {
    let faulty = Faulty(name: "decoder", failing: [3])
    let harness = try NodeHarness(faulty)
    harness.push(contentsOf: [1, 2, 3, 4])
    harness.runUntilIdle()
    let failure = try #require(harness.reportedFailures.first)
    #expect(failure.nodeName == "decoder")
    #expect(failure.isFrom(faulty) && !failure.isFrom(Faulty(failing: [])))
    #expect(failure.error as? Unreadable == Unreadable(item: 3))
    #expect(harness.outputItems == [1, 2, 4], "resume goes on with the next item")
  }

  @Test("endBranch ends only the failing branch; the other branch runs to the end")
  func endBranchEndsOneBranch() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 100)
    let faulty = Faulty(failing: [10])
    let healthy = PassThrough<Int>(name: "healthy")
    let faultySink = CollectingSink<Int>(name: "faultySink")
    let healthySink = CollectingSink<Int>(name: "healthySink")
    pipeline.connect(source, to: faulty, limits: EdgeLimits(items: 4))
    pipeline.connect(source, to: healthy, limits: EdgeLimits(items: 4))
    pipeline.connect(faulty, to: faultySink)
    pipeline.connect(healthy, to: healthySink)
    let failures = LockedArray<String>()
    pipeline.errorHandler = { failure in
      failures.append(failure.nodeName)
      return .endBranch
    }
    try pipeline.start()
    executor.runUntilIdle()
    #expect(failures.values == ["Faulty"])
    #expect(faultySink.items == Array(0..<10))
    #expect(faultySink.finishCount == 1)
    #expect(healthySink.items == Array(0..<100))
    #expect(healthySink.finishCount == 1)
  }

  @Test("without a handler a failure stops the whole pipeline")
  func defaultStopsPipeline() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = CountingSource(count: 100)
    let faulty = Faulty(failing: [5])
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: faulty, limits: EdgeLimits(items: 2))
    pipeline.connect(faulty, to: sink, limits: EdgeLimits(items: 2))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(sink.stopCount == 1)
    #expect(sink.finishCount == 0)
    #expect(sink.items.count <= 5)
    #expect(source.emitted < 100)
  }
}
