import PipelineGraph

/// One entry a test node saw or a script holds: an item or an in-band event.
public enum Recorded<Item> {
  /// A data item.
  case item(Item)
  /// An in-band event.
  case event(PipelineEvent)

  /// The item, if this is one.
  public var item: Item? {
    if case .item(let item) = self { return item }
    return nil
  }

  /// The event, if this is one.
  public var event: PipelineEvent? {
    if case .event(let event) = self { return event }
    return nil
  }
}

extension Recorded: Sendable where Item: Sendable {}
