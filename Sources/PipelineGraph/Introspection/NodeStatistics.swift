/// Counters of one node, as ``Pipeline/statistics()`` reports them.
public struct NodeStatistics: Sendable, Hashable, Codable {
  /// The node's name.
  public var name: String
  /// The node's Swift type.
  public var type: String
  /// Items the node consumed.
  public var itemsIn = 0
  /// Items the node emitted (counted once per `emit`, whatever the fan-out).
  public var itemsOut = 0
  /// In-band events the node received.
  public var eventsIn = 0
  /// Time spent inside the node's hooks, in nanoseconds.
  public var busyNanoseconds: Int64 = 0
  /// The deepest any of the node's input edges has been, in items.
  public var inputHighWater = 0

  /// Creates zeroed counters.
  public init(name: String, type: String) {
    self.name = name
    self.type = type
  }
}
