import PipelineGraph
import PipelineTestKit
import Testing

@Suite("End of stream")
struct EndOfStreamTests {
  @Test("endOfStream reaches every sink exactly once through fan-out and fan-in")
  func everySinkFinishesOnce() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sourceA = CountingSource(name: "a", count: 10)
    let sourceB = CountingSource(name: "b", count: 20)
    let join = PassThrough<Int>(name: "join")
    let sinks = (0..<3).map { CollectingSink<Int>(name: "sink\($0)") }
    pipeline.connect(sourceA, to: join)
    pipeline.connect(sourceB, to: join)
    for sink in sinks { pipeline.connect(join, to: sink) }
    let ends = LockedArray<Int>()
    pipeline.onEndOfStream = { _ in ends.append(1) }
    try pipeline.start()
    executor.runUntilIdle()
    for sink in sinks {
      #expect(sink.finishCount == 1)
      #expect(sink.items.count == 30)
      #expect(sink.events.count == 1)
    }
    #expect(ends.count == 1)
  }

  @Test("a node finishes only when all of its inputs have ended, and may emit in finish")
  func finishWaitsForAllInputs() throws {
    final class Counter: Node {
      typealias Input = Int
      typealias Output = Int
      var total = 0
      func process(_ input: Int, context: NodeContext<Int>) throws { total += 1 }
      func finish(context: NodeContext<Int>) throws { context.emit(total) }
    }
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let slow = ScriptedSource<Int>(name: "slow", [.item(1)], endsAfterScript: false)
    let fast = CountingSource(name: "fast", count: 5)
    let counter = Counter()
    let sink = CollectingSink<Int>()
    pipeline.connect(slow, to: counter)
    pipeline.connect(fast, to: counter)
    pipeline.connect(counter, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    #expect(sink.finishCount == 0)
    slow.endInput()
    executor.runUntilIdle()
    #expect(sink.items == [6])
    #expect(sink.finishCount == 1)
  }

  @Test("the harness reports a clean finish, and leftovers when output went unread")
  func harnessFinish() throws {
    let clean = try NodeHarness(PassThrough<Int>())
    clean.push(1)
    clean.runUntilIdle()
    #expect(clean.readOutput().compactMap(\.item) == [1])
    #expect(clean.finish() == .clean)

    let dirty = try NodeHarness(PassThrough<Int>())
    dirty.push(contentsOf: [1, 2])
    #expect(dirty.finish() == .leftOvers(count: 3))
  }
}
