import PipelineGraph

/// A sink that records everything it receives, for assertions.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle: read it, or ``reset()`` it, on the
/// thread driving that executor or once the pipeline is idle. A flush resets nothing.
public final class CollectingSink<Item>: Node {
  /// The sink consumes `Item`s.
  public typealias Input = Item
  /// A sink emits nothing.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  /// Every item and event received, in order.
  public private(set) var received: [Recorded<Item>] = []
  /// How many times `finish` ran (end of stream reached).
  public private(set) var finishCount = 0
  /// How many times the sink was flushed.
  public private(set) var flushCount = 0
  /// How many times `stop` ran.
  public private(set) var stopCount = 0

  private var context: NodeContext<Never>?

  /// Creates a sink named `name`.
  public init(name: String = "CollectingSink") { self.name = name }

  /// Remembers the context, for ``sendUpstream(_:)``.
  public func start(context: NodeContext<Never>) throws { self.context = context }

  /// Sends `event` to the sink's producers, as a consumer that falls behind would (on the sink's
  /// executor: the thread driving it, once the pipeline started; ignored before).
  public func sendUpstream(_ event: UpstreamEvent) { context?.sendUpstream(event) }

  /// The items received, in order.
  public var items: [Item] { received.compactMap(\.item) }
  /// The events received, in order.
  public var events: [PipelineEvent] { received.compactMap(\.event) }

  /// Records the item.
  public func process(_ input: Item, context: NodeContext<Never>) throws { received.append(.item(input)) }
  /// Records the event.
  public func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws { received.append(.event(event)) }
  /// Counts the end of stream and records it as an event.
  public func finish(context: NodeContext<Never>) throws {
    finishCount += 1
    received.append(.event(.endOfStream))
  }
  /// Counts the flush.
  public func flush(context: NodeContext<Never>) { flushCount += 1 }
  /// Counts the stop.
  public func stop(context: NodeContext<Never>) {
    stopCount += 1
    self.context = nil
  }

  /// Forgets what was received.
  public func reset() { received.removeAll() }
}
