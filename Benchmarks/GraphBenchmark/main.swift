import Dispatch
import Foundation
import PipelineGraph

// Items per second through `source → 4 pass-through nodes → sink`, the shape of
// `gst-launch-1.0 fakesrc num-buffers=N ! identity ! identity ! identity ! identity ! fakesink`.
// Like fakesrc, the source allocates one reference-counted buffer object per item.
// Usage: GraphBenchmark [chain|boundary] [items]

final class Buffer: Sendable {
  let sequence: Int
  init(sequence: Int) { self.sequence = sequence }
}

final class BufferSource: SourceNode {
  typealias Output = Buffer
  let count: Int
  var emitted = 0
  init(count: Int) { self.count = count }
  func produce(context: NodeContext<Buffer>) throws -> ProduceResult {
    guard emitted < count else { return .finished }
    context.emit(Buffer(sequence: emitted))
    emitted += 1
    return .produced
  }
}

final class Identity: Node {
  typealias Input = Buffer
  typealias Output = Buffer
  let name: String
  init(name: String) { self.name = name }
}

final class CountingSink: Node, @unchecked Sendable {
  typealias Input = Buffer
  typealias Output = Never
  var received = 0
  var lastSequence = -1
  func process(_ input: Buffer, context: NodeContext<Never>) throws {
    precondition(input.sequence == lastSequence + 1, "out of order")
    lastSequence = input.sequence
    received += 1
  }
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "chain"
let count = arguments.count > 2 ? Int(arguments[2]) ?? 10_000_000 : 10_000_000

let first = ThreadExecutor(name: "bench.0")
let second = ThreadExecutor(name: "bench.1")
let pipeline = Pipeline(executor: first, clock: MonotonicClock())
let source = BufferSource(count: count)
let identities = (0..<4).map { Identity(name: "identity\($0)") }
let sink = CountingSink()
if mode == "boundary" {
  // Two threads, like `... ! identity ! identity ! queue ! identity ! identity ! fakesink`.
  pipeline.add(identities[2], on: second)
  pipeline.add(identities[3], on: second)
  pipeline.add(sink, on: second)
}
pipeline.connect(source, to: identities[0])
pipeline.connect(identities[0], to: identities[1])
pipeline.connect(
  identities[1], to: identities[2], limits: EdgeLimits(items: mode == "boundary" ? 1024 : 64),
  threadBoundary: mode == "boundary")
pipeline.connect(identities[2], to: identities[3])
pipeline.connect(identities[3], to: sink)

let began = DispatchTime.now().uptimeNanoseconds
let outcome = try pipeline.runToCompletion()
let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
precondition(outcome.reachedEndOfStream && sink.received == count, "lost items: \(sink.received) of \(count)")
first.shutdown()
second.shutdown()
let rate = Double(count) / seconds
print(String(format: "tipipe %@: %d items in %.3f s = %.0f items/s", mode, count, seconds, rate))
