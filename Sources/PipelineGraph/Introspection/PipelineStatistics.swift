/// A snapshot of a pipeline's counters.
public struct PipelineStatistics: Sendable, Hashable, Codable {
  /// One entry per node, in the order they were added.
  public var nodes: [NodeStatistics]
  /// One entry per edge, in the order they were connected.
  public var edges: [EdgeStatistics]

  /// The statistics of the node named `name`.
  public func node(named name: String) -> NodeStatistics? { nodes.first { $0.name == name } }
}
