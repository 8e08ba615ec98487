/// How much an edge may hold before its producer is stopped (backpressure).
///
/// An edge is *full* when any bound is reached. A node is scheduled only while all its output edges
/// have room. A node that emits many items per input adopts ``SteppingNode`` and emits them one per
/// step, so its output edges hold at most `items` entries, and at most one item's bytes and duration
/// over their bounds; a plain node's one call may overshoot by what that call emits.
public struct EdgeLimits: Sendable, Hashable, CustomStringConvertible {
  /// Maximum queued items (events count as items).
  public var items: Int
  /// Maximum queued bytes, for items that are ``WeighedItem``s; `nil` for no byte bound.
  public var bytes: Int?
  /// Maximum queued media duration, for ``WeighedItem``s; `nil` for no bound.
  public var duration: MediaDuration?

  /// Creates limits; every bound must be positive.
  public init(items: Int = 64, bytes: Int? = nil, duration: MediaDuration? = nil) {
    precondition(items > 0, "an edge must hold at least one item")
    self.items = items
    self.bytes = bytes
    self.duration = duration
  }

  /// 64 items, no byte or duration bound.
  public static let `default` = EdgeLimits()

  /// The limits as `items/bytes/duration` text, for `dot()`.
  public var description: String {
    var parts = ["\(items) items"]
    if let bytes { parts.append("\(bytes) B") }
    if let duration { parts.append("\(duration)") }
    return parts.joined(separator: ", ")
  }
}
