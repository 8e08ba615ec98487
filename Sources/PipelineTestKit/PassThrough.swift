import PipelineGraph

/// A node that passes items through unchanged (GStreamer's `identity`).
///
/// Stateless; confined to its pipeline's executor.
public final class PassThrough<Item>: Node {
  /// Consumes `Item`s.
  public typealias Input = Item
  /// Emits the same `Item`s.
  public typealias Output = Item
  /// The node's name.
  public let name: String
  /// Creates a pass-through node.
  public init(name: String = "PassThrough") { self.name = name }
}
