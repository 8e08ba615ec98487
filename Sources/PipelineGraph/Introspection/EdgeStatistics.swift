/// Counters of one edge.
public struct EdgeStatistics: Sendable, Hashable, Codable {
  /// Producer's name.
  public var from: String
  /// Consumer's name.
  public var to: String
  /// The Swift type of the items on the edge.
  public var type: String
  /// The edge's bounds, as text.
  public var limits: String
  /// True when the edge joins two executors.
  public var isThreadBoundary: Bool
  /// Entries queued now.
  public var depth: Int
  /// The most entries ever queued.
  public var highWaterItems: Int
  /// The most bytes ever queued (``WeighedItem``s only).
  public var highWaterBytes: Int
  /// Entries that went through the edge.
  public var itemsPassed: Int

  init(
    from: String, to: String, type: String, limits: EdgeLimits, isThreadBoundary: Bool, depth: Int,
    highWaterItems: Int, highWaterBytes: Int, itemsPassed: Int
  ) {
    self.from = from
    self.to = to
    self.type = type
    self.limits = limits.description
    self.isThreadBoundary = isThreadBoundary
    self.depth = depth
    self.highWaterItems = highWaterItems
    self.highWaterBytes = highWaterBytes
    self.itemsPassed = itemsPassed
  }
}
