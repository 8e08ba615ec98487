/// A pass-through node that watches, and may drop, what crosses an edge (GStreamer's pad probe): put
/// it between two nodes to count, log, assert on or filter their items and events without changing
/// either node.
///
/// ```swift
/// let probe = Probe<Packet>(name: "keyframes") { packet in packet.isKeyframe ? .pass : .drop }
/// pipeline.connect(demuxer, to: probe)
/// pipeline.connect(probe, to: decoder)
/// ```
///
/// The closures run on the probe's executor, in order with the stream. It has no states of its own
/// beyond the ``Node`` lifecycle.
public final class Probe<Item>: Node {
  /// Consumes items.
  public typealias Input = Item
  /// Emits the items it lets through.
  public typealias Output = Item

  /// What happens to an item.
  public enum Decision: Sendable {
    /// It goes on.
    case pass
    /// It is dropped here.
    case drop
  }

  /// The node's name.
  public let name: String
  private let onItem: (Item) throws -> Decision
  private let onEvent: ((PipelineEvent) -> Void)?

  /// A probe calling `onItem` for every item (its decision applies) and `onEvent` for every event
  /// (events always go on).
  public init(
    name: String = "Probe", onEvent: ((PipelineEvent) -> Void)? = nil, _ onItem: @escaping (Item) throws -> Decision
  ) {
    self.name = name
    self.onItem = onItem
    self.onEvent = onEvent
  }

  /// Lets the item through unless the closure drops it.
  public func process(_ input: Item, context: NodeContext<Item>) throws {
    if try onItem(input) == .pass { context.emit(input) }
  }

  /// Shows the event, then forwards it.
  public func handle(_ event: PipelineEvent, context: NodeContext<Item>) throws {
    onEvent?(event)
    context.send(event)
  }
}
