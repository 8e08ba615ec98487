import Foundation

/// Why ``Pipeline/runToCompletion(patience:)`` gave up.
public enum PipelineRunError: Error, Equatable, CustomStringConvertible {
  /// The pipeline is driven by ``ManualExecutor``s, none of them has a job left and no other thread
  /// posted one within the patience given: the graph can make no progress (a node waits for something
  /// that never comes).
  case stalled

  /// A sentence for people.
  public var description: String {
    "the pipeline stalled: no job is queued and none arrived, yet it has neither ended nor stopped"
  }
}
