import PipelineGraph
import PipelineTestKit

/// A payload for test events.
struct Tag: EventPayload, Equatable {
  var value: String
  var description: String { value }
}

/// Emits each input twice, tagged with the node's name: shows which branch an item took.
final class Labeler: Node {
  typealias Input = Int
  typealias Output = String
  let name: String
  init(name: String) { self.name = name }
  func process(_ input: Int, context: NodeContext<String>) throws { context.emit("\(name):\(input)") }
}

/// Fails on chosen items.
/// The error `Faulty` throws.
struct Unreadable: Error, Equatable {
  var item: Int
}

final class Faulty: Node {
  typealias Input = Int
  typealias Output = Int
  let name: String
  let failing: Set<Int>
  init(name: String = "Faulty", failing: Set<Int>) {
    self.name = name
    self.failing = failing
  }
  func process(_ input: Int, context: NodeContext<Int>) throws {
    if failing.contains(input) { throw Unreadable(item: input) }
    context.emit(input)
  }
}

/// A byte-weighed item.
struct Chunk: WeighedItem, Sendable {
  var index: Int
  var byteCount: Int
  var duration: MediaDuration
}

extension PipelineEvent {
  /// The payload text of a custom event, for comparisons.
  var tag: String? {
    if case .custom(let payload) = self { return payload.description }
    return nil
  }
}
