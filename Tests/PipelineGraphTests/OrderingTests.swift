import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Ordering of data and events")
struct OrderingTests {
  @Test("events stay in order with data on a straight chain")
  func eventsInOrderOnAChain() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>([
      .event(.rangeStart(MediaRange(startMilliseconds: 0, endMilliseconds: 10))), .item(1), .item(2),
      .event(.custom(Tag(value: "mark"))), .item(3),
    ])
    let middle = PassThrough<Int>()
    let sink = CollectingSink<Int>()
    pipeline.connect(source, to: middle, limits: EdgeLimits(items: 1))
    pipeline.connect(middle, to: sink, limits: EdgeLimits(items: 1))
    try pipeline.start()
    executor.runUntilIdle()
    let trace = sink.received.map { entry -> String in
      if let item = entry.item { return "\(item)" }
      return "\(entry.event!)"
    }
    #expect(trace == ["rangeStart([0, 10))", "1", "2", "custom(mark)", "3", "endOfStream"])
  }

  @Test("fan-out gives every branch every item and event in order; fan-in keeps each input's order")
  func fanOutFanIn() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    var script: [Recorded<Int>] = []
    for index in 0..<500 {
      script.append(.item(index))
      if index % 100 == 0 { script.append(.event(.custom(Tag(value: "at\(index)")))) }
    }
    let source = ScriptedSource(script)
    let left = Labeler(name: "L")
    let right = Labeler(name: "R")
    let merged = PassThrough<String>(name: "merge")
    let sink = CollectingSink<String>()
    pipeline.connect(source, to: left, limits: EdgeLimits(items: 3))
    pipeline.connect(source, to: right, limits: EdgeLimits(items: 5))
    pipeline.connect(left, to: merged, limits: EdgeLimits(items: 2))
    pipeline.connect(right, to: merged, limits: EdgeLimits(items: 7))
    pipeline.connect(merged, to: sink)
    try pipeline.start()
    executor.runUntilIdle()

    for branch in ["L", "R"] {
      // Each branch's items arrive in source order, and each event follows the item it followed.
      var expected: [String] = []
      for index in 0..<500 {
        expected.append("\(branch):\(index)")
      }
      let got = sink.items.filter { $0.hasPrefix(branch + ":") }
      #expect(got == expected)
    }
    // Every event from both branches arrives, each after the item before it on its branch.
    let tags = sink.events.compactMap(\.tag)
    #expect(tags.count == 10)
    #expect(sink.finishCount == 1)
    #expect(sink.events.last.map { "\($0)" } == "endOfStream")
  }
}
