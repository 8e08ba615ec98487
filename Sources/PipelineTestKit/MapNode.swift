import PipelineGraph

/// A node that applies a function to every item.
///
/// Stateless; the function runs on the node's executor, in order with the stream.
public final class MapNode<Input, Output>: Node {
  /// The node's name.
  public let name: String
  private let transform: (Input) throws -> Output

  /// Creates a node that emits `transform(item)` for every item.
  public init(name: String = "Map", _ transform: @escaping (Input) throws -> Output) {
    self.name = name
    self.transform = transform
  }

  /// Emits the transformed item.
  public func process(_ input: Input, context: NodeContext<Output>) throws { context.emit(try transform(input)) }
}
