import PipelineGraph

/// A sink that takes one item per `interval` of clock time: a slow consumer, to exercise backpressure.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush resets nothing. ``onConsume``
/// runs on that executor (set it before `start`).
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
