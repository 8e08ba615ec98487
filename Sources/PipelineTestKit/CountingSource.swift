import PipelineGraph

/// A source that emits the integers `0..<count` on demand, then finishes.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle (read ``emitted`` once the pipeline is
/// idle); a flush restarts it from 0.
public final class CountingSource: SourceNode {
  /// Emits integers.
  public typealias Output = Int
  /// The node's name.
  public let name: String
  /// How many integers it emits in all.
  public let count: Int
  /// How many it has emitted so far.
  public private(set) var emitted = 0

  /// Creates a source of `count` integers.
  public init(name: String = "CountingSource", count: Int) {
    self.name = name
    self.count = count
  }

  /// Emits the next integer.
  public func produce(context: NodeContext<Int>) throws -> ProduceResult {
    guard emitted < count else { return .finished }
    context.emit(emitted)
    emitted += 1
    return .produced
  }

  /// Restarts from 0.
  public func flush(context: NodeContext<Int>) { emitted = 0 }
}
