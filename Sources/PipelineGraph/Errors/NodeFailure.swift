/// An error raised by a node, with the node's identity, as the pipeline's error handler receives it.
///
/// The engine carries errors as they were thrown; what they mean (a seed error code, a gap reason) is
/// the business of the node library and the configuration that handles them.
public struct NodeFailure: Error, Sendable, CustomStringConvertible {
  /// The failing node's name.
  public var nodeName: String
  /// The error the node threw or reported.
  public var error: any Error
  /// The failing node's identity, `ObjectIdentifier(node)`: compare it with a node kept by the
  /// configuration (names need not be unique).
  public let nodeID: ObjectIdentifier
  /// The flush generation the node was in: a failure of a generation older than the pipeline's
  /// concerns data a seek has already discarded.
  public let generation: Int

  init(node: ObjectIdentifier, nodeName: String, error: any Error, generation: Int) {
    nodeID = node
    self.nodeName = nodeName
    self.error = error
    self.generation = generation
  }

  /// True when `node` is the one that failed.
  public func isFrom(_ node: some Node) -> Bool { nodeID == ObjectIdentifier(node) }

  /// `name: error`.
  public var description: String { "\(nodeName): \(error)" }
}
