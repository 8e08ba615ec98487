import PipelineGraph
import PipelineTestKit
import Testing

/// Takes upstream events without forwarding them (a producer that acted on them).
final class UpstreamStop: Node {
  typealias Input = Int
  typealias Output = Int
  var taken: [String] = []
  func handleUpstream(_ event: UpstreamEvent, context: NodeContext<Int>) { taken.append("\(event)") }
}

@Suite("Upstream events")
struct UpstreamEventTests {
  @Test("an upstream event goes against the flow through every node to the source, at once on one executor")
  func forwardedToTheSource() throws {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<Int>(items: [1, 2, 3])
    let first = PassThrough<Int>(name: "first")
    let second = PassThrough<Int>(name: "second")
    let sink = CollectingSink<Int>()
    let other = CollectingSink<Int>(name: "other")
    pipeline.connect(source, to: first)
    pipeline.connect(first, to: second)
    pipeline.connect(second, to: sink)
    // A second branch of the source: its consumer's event and this one's reach the source once each.
    pipeline.connect(source, to: other)
    try pipeline.start()
    executor.runUntilIdle()
    sink.sendUpstream(.custom(Tag(value: "from the sink")))
    #expect(source.upstreamEvents.map(\.description) == ["custom(from the sink)"])
    other.sendUpstream(.qualityOfService(QualityOfService(.essentialOnly, lateness: .milliseconds(40))))
    #expect(
      source.upstreamEvents.map(\.description) == [
        "custom(from the sink)", "qualityOfService(essentialOnly, late 0.04 seconds)",
      ])
    // Events do not disturb the data.
    #expect(sink.items == [1, 2, 3] && other.items == [1, 2, 3])
    pipeline.stop()
    executor.runUntilIdle()
    // A stopped node sends nothing.
    sink.sendUpstream(.custom(Tag(value: "late")))
    #expect(source.upstreamEvents.count == 2)
  }

  @Test("a node that handles an upstream event ends its journey there")
  func takenOnTheWay() throws {
    let harness = try NodeHarness(UpstreamStop())
    harness.sendUpstream(.qualityOfService(QualityOfService(.nothing)))
    #expect(harness.node.taken == ["qualityOfService(nothing)"])
    #expect(harness.upstreamEvents.isEmpty)
    #expect(harness.finish() == .clean)
  }

  @Test("across a thread boundary the event waits for the producer's executor")
  func acrossExecutors() throws {
    let producerSide = ManualExecutor()
    let consumerSide = ManualExecutor()
    let pipeline = Pipeline(executor: producerSide, clock: VirtualClock())
    let source = ScriptedSource<Int>(items: [7])
    let sink = CollectingSink<Int>()
    pipeline.add(source)
    pipeline.add(sink, on: consumerSide)
    pipeline.connect(source, to: sink, threadBoundary: true)
    try pipeline.start()
    producerSide.runUntilIdle()
    consumerSide.runUntilIdle()
    sink.sendUpstream(.qualityOfService(QualityOfService(.everything)))
    #expect(source.upstreamEvents.isEmpty)
    producerSide.runUntilIdle()
    #expect(source.upstreamEvents.map(\.description) == ["qualityOfService(everything)"])
    // A seek the producer has made and the consumer not yet: what the consumer says now is about the
    // stretch before it, and is dropped.
    pipeline.flush()
    producerSide.runUntilIdle()
    sink.sendUpstream(.custom(Tag(value: "before the seek")))
    producerSide.runUntilIdle()
    #expect(source.upstreamEvents.count == 1)
    consumerSide.runUntilIdle()
    sink.sendUpstream(.custom(Tag(value: "after the seek")))
    producerSide.runUntilIdle()
    #expect(source.upstreamEvents.map(\.description).last == "custom(after the seek)")
    pipeline.stop()
    producerSide.runUntilIdle()
    consumerSide.runUntilIdle()
  }
}
