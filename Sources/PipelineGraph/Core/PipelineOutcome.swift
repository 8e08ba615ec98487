import Foundation

/// How a run of a pipeline ended, as ``Pipeline/runToCompletion(patience:)`` and ``Pipeline/run()`` return it.
public struct PipelineOutcome: Sendable {
  /// True when every sink received `endOfStream`; false when the pipeline stopped first.
  public var reachedEndOfStream: Bool
  /// Every failure the error handler saw, in order.
  public var failures: [NodeFailure]
}
