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

/// A snapshot of a pipeline's counters.
public struct PipelineStatistics: Sendable, Hashable, Codable {
  /// One entry per node, in the order they were added.
  public var nodes: [NodeStatistics]
  /// One entry per edge, in the order they were connected.
  public var edges: [EdgeStatistics]

  /// The statistics of the node named `name`.
  public func node(named name: String) -> NodeStatistics? { nodes.first { $0.name == name } }
}
