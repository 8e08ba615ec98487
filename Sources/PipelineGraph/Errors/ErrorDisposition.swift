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
