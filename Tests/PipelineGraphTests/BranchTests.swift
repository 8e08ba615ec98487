import PipelineGraph
import PipelineTestKit
import Synchronization
import Testing

/// Branches joining and leaving a running pipeline (GStreamer's request pads on a tee): what joins
/// takes what its producer emits from then on, nothing is read again, and the end of the stream is
/// announced once, when every sink there is has ended.
@Suite("Branches of a running pipeline")
struct BranchTests {
  /// `source → sink`, started and idle; the source goes on with what the test appends.
  private func running() throws -> (Pipeline, ManualExecutor, ScriptedSource<Int>, CollectingSink<Int>, Ends) {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>(name: "source", [.item(1), .item(2)], endsAfterScript: false)
    let sink = CollectingSink<Int>(name: "first")
    pipeline.connect(source, to: sink)
    let ends = Ends()
    pipeline.onEndOfStream = { generation in ends.note(generation) }
    try pipeline.start()
    executor.runUntilIdle()
    return (pipeline, executor, source, sink, ends)
  }

  @Test("a branch takes what its producer emits after it joined; the producer goes on, nothing is read again")
  func aBranchJoinsWithoutRereading() throws {
    let (pipeline, executor, source, first, _) = try running()
    let pass = PassThrough<Int>(name: "pass")
    let second = CollectingSink<Int>(name: "second")
    try pipeline.attach { pipeline in
      pipeline.connect(source, to: pass)
      pipeline.connect(pass, to: second)
    }
    // It joins at the executor's next turn: nothing reaches it before.
    source.append([.item(3), .item(4)])
    executor.runUntilIdle()
    #expect(first.items == [1, 2, 3, 4])
    #expect(second.items == [3, 4])
    #expect(source.flushCount == 0)
    #expect(pipeline.statistics().nodes.map(\.name) == ["source", "first", "pass", "second"])
    #expect(pipeline.dot().contains("second"))
    pipeline.stop()
    executor.runUntilIdle()
    #expect(second.stopCount == 1 && first.stopCount == 1)
  }

  @Test("the end waits for a sink that joined; a sink joining after the end hears it at once, announced once")
  func theEndCountsEverySink() throws {
    let (pipeline, executor, source, first, ends) = try running()
    let second = CollectingSink<Int>(name: "second")
    try pipeline.attach { $0.connect(source, to: second) }
    executor.runUntilIdle()
    source.endInput()
    executor.runUntilIdle()
    #expect(first.finishCount == 1 && second.finishCount == 1)
    #expect(ends.generations == [0])
    let late = CollectingSink<Int>(name: "late")
    try pipeline.attach { $0.connect(source, to: late) }
    executor.runUntilIdle()
    #expect(late.finishCount == 1 && late.items.isEmpty)
    #expect(ends.generations == [0])
  }

  @Test("a branch starts in the current flush generation and is flushed with the rest by later seeks")
  func aBranchFollowsFlushes() throws {
    let (pipeline, executor, source, first, ends) = try running()
    pipeline.seek(to: MediaTime(microseconds: 1_000))
    executor.runUntilIdle()
    let second = CollectingSink<Int>(name: "second")
    try pipeline.attach { $0.connect(source, to: second) }
    source.append([.item(5)])
    executor.runUntilIdle()
    #expect(second.items.last == 5)
    #expect(second.flushCount == 0)
    pipeline.seek(to: MediaTime(microseconds: 2_000))
    source.append([.item(6)])
    executor.runUntilIdle()
    #expect(second.flushCount == 1 && first.flushCount == 2)
    #expect(second.items.last == 6)
    // It ends with the others, in the generation they are in.
    source.endInput()
    executor.runUntilIdle()
    #expect(second.finishCount == 1 && ends.generations == [2])
    #expect(source.flushTargets == [MediaTime(microseconds: 1_000), MediaTime(microseconds: 2_000)])
  }

  @Test("a branch that leaves is cut and stopped; the others go on; its leaving may complete the end")
  func aBranchLeaves() throws {
    let (pipeline, executor, source, first, ends) = try running()
    let pass = PassThrough<Int>(name: "pass")
    let second = CollectingSink<Int>(name: "second")
    try pipeline.attach { pipeline in
      pipeline.connect(source, to: pass)
      pipeline.connect(pass, to: second)
    }
    source.append([.item(3)])
    executor.runUntilIdle()
    try pipeline.detach([pass, second])
    source.append([.item(4)])
    executor.runUntilIdle()
    #expect(second.stopCount == 1 && second.items == [3])
    #expect(first.items == [1, 2, 3, 4])
    #expect(pipeline.statistics().nodes.map(\.name) == ["source", "first"])
    // A sink that has not ended leaves after every other sink ended: the end is announced then.
    let slow = Holding()
    try pipeline.attach { $0.connect(source, to: slow) }
    executor.runUntilIdle()
    source.endInput()
    executor.runUntilIdle()
    #expect(first.finishCount == 1 && ends.generations.isEmpty)
    try pipeline.detach([slow])
    executor.runUntilIdle()
    #expect(ends.generations == [0])
  }

  @Test("a branch on another executor joins across a declared thread boundary")
  func aBranchOnAnotherExecutor() throws {
    let (pipeline, executor, source, _, ends) = try running()
    let other = ManualExecutor()
    let second = CollectingSink<Int>(name: "second")
    #expect(throws: GraphError.undeclaredThreadBoundary(from: "source", to: "second")) {
      try pipeline.attach { pipeline in
        pipeline.add(second, on: other)
        pipeline.connect(source, to: second)
      }
    }
    let third = CollectingSink<Int>(name: "third")
    try pipeline.attach { pipeline in
      pipeline.add(third, on: other)
      pipeline.connect(source, to: third, threadBoundary: true)
    }
    other.runUntilIdle()
    executor.runUntilIdle()
    source.append([.item(7)])
    source.endInput()
    executor.runUntilIdle()
    other.runUntilIdle()
    executor.runUntilIdle()
    other.runUntilIdle()
    #expect(third.items == [7] && third.finishCount == 1)
    #expect(!pipeline.statistics().nodes.map(\.name).contains("second"))
    #expect(ends.generations == [0])
  }

  @Test("branches join and leave a pipeline running on threads, over and over: the trunk loses nothing")
  func joiningAndLeavingOnThreads() throws {
    let trunk = ThreadExecutor(name: "test.trunk")
    let branches = ThreadExecutor(name: "test.branches")
    defer {
      trunk.shutdown()
      branches.shutdown()
    }
    let pipeline = Pipeline(executor: trunk, clock: MonotonicClock())
    let total = 100_000
    let source = CountingSource(count: total)
    let sink = SharedSink()
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 16))
    let ended = Awaited<Int>()
    let announced = Atomic(0)
    pipeline.onEndOfStream = { generation in
      announced.add(1, ordering: .relaxed)
      ended.fulfill(generation)
    }
    try pipeline.start()
    var stopped: [CountingSink] = []
    for round in 0..<40 {
      let pass = PassThrough<Int>(name: "pass\(round)")
      let branch = CountingSink()
      try pipeline.attach { pipeline in
        pipeline.add(pass, on: branches)
        pipeline.add(branch, on: branches)
        pipeline.connect(source, to: pass, limits: EdgeLimits(items: 4), threadBoundary: true)
        pipeline.connect(pass, to: branch)
      }
      try pipeline.detach([pass, branch])
      stopped.append(branch)
    }
    #expect(ended.wait(timeout: .seconds(300)) == 0)
    // The branches' last jobs come after the end on their own thread.
    let drained = Awaited<Void>()
    branches.execute { drained.fulfill(()) }
    #expect(drained.wait(timeout: .seconds(300)) != nil)
    trunk.shutdown()
    #expect(sink.items == Array(0..<total) && sink.finishes == 1)
    #expect(announced.load(ordering: .relaxed) == 1)
    #expect(stopped.allSatisfy { $0.stops.load(ordering: .relaxed) == 1 })
  }

  @Test("what cannot join or leave is refused with its reason, and nothing changes")
  func refusals() throws {
    let (pipeline, executor, source, first, _) = try running()
    let pass = PassThrough<Int>(name: "pass")
    #expect(throws: GraphError.intoRunningNode(from: "pass", to: "first")) {
      try pipeline.attach { pipeline in
        pipeline.connect(source, to: pass)
        pipeline.connect(pass, to: first)
      }
    }
    #expect(throws: GraphError.unconnectedOutput("pass")) {
      try pipeline.attach { $0.connect(source, to: pass) }
    }
    #expect(throws: GraphError.notInPipeline("pass")) { try pipeline.detach([pass]) }
    #expect(throws: GraphError.unconnectedOutput("source")) { try pipeline.detach([first]) }
    let second = CollectingSink<Int>(name: "second")
    try pipeline.attach { pipeline in
      pipeline.connect(source, to: pass)
      pipeline.connect(pass, to: second)
    }
    #expect(throws: GraphError.feedsRemainingNode(from: "pass", to: "second")) { try pipeline.detach([pass]) }
    source.append([.item(3)])
    executor.runUntilIdle()
    #expect(second.items == [3] && first.items == [1, 2, 3])
    pipeline.stop()
    #expect(throws: GraphError.stopped) {
      try pipeline.attach { $0.connect(source, to: CollectingSink<Int>(name: "after")) }
    }
    executor.runUntilIdle()
  }
}

/// The generations whose end the pipeline announced.
private final class Ends: Sendable {
  private let noted = Mutex<[Int]>([])
  func note(_ generation: Int) { noted.withLock { $0.append(generation) } }
  var generations: [Int] { noted.withLock { $0 } }
}

/// A sink that never ends: it holds its end of stream back.
private final class Holding: Node {
  typealias Input = Int
  typealias Output = Never
  let name = "holding"
  func start(context: NodeContext<Never>) throws { context.holdEndOfStream() }
  func process(_ input: Int, context: NodeContext<Never>) throws {}
}

/// Counts what it takes and its stops, from any thread.
private final class CountingSink: Node, Sendable {
  typealias Input = Int
  typealias Output = Never
  let name = "counting"
  let taken = Atomic(0)
  let stops = Atomic(0)
  func process(_ input: Int, context: NodeContext<Never>) throws { taken.add(1, ordering: .relaxed) }
  func stop(context: NodeContext<Never>) { stops.add(1, ordering: .relaxed) }
}
