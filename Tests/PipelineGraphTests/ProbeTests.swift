import PipelineGraph
import PipelineTestKit
import Testing

/// Emits nothing until the end, then the sum of what it got.
final class Summing: Node {
  typealias Input = Int
  typealias Output = Int
  var total = 0
  func process(_ input: Int, context: NodeContext<Int>) throws { total += input }
  func finish(context: NodeContext<Int>) throws { context.emit(total) }
}

@Suite("Probes and harness")
struct ProbeTests {
  @Test("a probe sees every item and event in order and drops what it decides to")
  func probe() throws {
    var seen: [Int] = []
    var events: [String] = []
    let probe = Probe<Int>(name: "odd", onEvent: { events.append("\($0)") }) { item in
      seen.append(item)
      return item % 2 == 1 ? .pass : .drop
    }
    let harness = try NodeHarness(probe)
    harness.push(contentsOf: [1, 2, 3])
    harness.push(event: .custom(Tag(value: "mark")))
    harness.push(4)
    harness.runUntilIdle()
    #expect(seen == [1, 2, 3, 4])
    #expect(events == ["custom(mark)"])
    #expect(harness.readOutput().compactMap(\.item) == [1, 3])
    #expect(harness.finish() == .clean)
  }

  @Test("a node that emits in finish: end the input, read what it emitted, then finish clean")
  func emitsInFinish() throws {
    let harness = try NodeHarness(Summing())
    harness.push(contentsOf: [1, 2, 3])
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.readOutput().compactMap(\.item) == [6])
    #expect(harness.didFinish)
    #expect(harness.finish() == .clean)
  }
}
