import PipelineGraph

/// A node that passes items through unchanged (GStreamer's `identity`).
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

/// A node that applies a function to every item.
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

/// A source that emits the integers `0..<count` on demand, then finishes.
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

/// A sink that takes one item per `interval` of clock time: a slow consumer, to exercise backpressure.
public final class PacedSink<Item>: Node {
  /// Consumes `Item`s.
  public typealias Input = Item
  /// Emits nothing.
  public typealias Output = Never
  /// The node's name.
  public let name: String
  private let interval: Duration
  /// Items consumed so far.
  public private(set) var consumed = 0
  /// Whether `finish` ran.
  public private(set) var finished = false
  /// Called after each item with the running count (for invariants checked while the pipeline runs).
  public var onConsume: ((Int) -> Void)?

  /// Creates a sink that accepts an item, then waits `interval` before accepting the next.
  public init(name: String = "PacedSink", interval: Duration) {
    self.name = name
    self.interval = interval
  }

  /// Consumes the item and pauses input for one interval.
  public func process(_ input: Item, context: NodeContext<Never>) throws {
    consumed += 1
    onConsume?(consumed)
    context.suspendInput()
    context.scheduleTimer(after: interval) { context.resumeInput() }
  }

  /// Notes the end of stream.
  public func finish(context: NodeContext<Never>) throws { finished = true }
}
