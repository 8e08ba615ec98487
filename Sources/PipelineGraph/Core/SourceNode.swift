/// A node that produces data on demand: the engine calls ``produce(context:)`` whenever every output
/// edge has room, so a source never runs ahead of its consumers.
///
/// ``produce(context:)`` runs on the node's executor, from `start` until it returns `finished` (again
/// after a flush), never after `stop`.
public protocol SourceNode: Node where Input == Never {
  /// Emits the next item(s) or events, or says why it cannot.
  func produce(context: NodeContext<Output>) throws -> ProduceResult
}

extension SourceNode {
  /// A source has no input; this is never called.
  public func process(_ input: Never, context: NodeContext<Output>) throws {}
}
