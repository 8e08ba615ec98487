/// An error raised by a node, with the node's identity, as the pipeline's error handler receives it.
public struct NodeFailure: Error, Sendable, CustomStringConvertible {
  /// The failing node's name.
  public var nodeName: String
  /// The failing node's position in the order nodes were added to the pipeline.
  public var nodeIndex: Int
  /// The error, as a ``TiError`` (other errors are wrapped as `ioFailed`).
  public var error: TiError

  /// `node #index (name): error`.
  public var description: String { "node #\(nodeIndex) (\(nodeName)): \(error)" }
}

/// What the pipeline does after a node failed; the configuration decides (e.g. an output's decode error
/// ends one branch, an expired token ends everything).
public enum ErrorDisposition: Sendable {
  /// Ignore the failure; the node goes on with the next item.
  case resume
  /// End the failing node's branch: it discards its input from now on and sends `endOfStream`.
  case endBranch
  /// Stop the whole pipeline.
  case stopPipeline
}
