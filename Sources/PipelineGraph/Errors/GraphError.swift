/// Why a pipeline cannot start, or a branch cannot join or leave it: the graph's shape is wrong. Checked by
/// ``Pipeline/start()``, ``Pipeline/attach(_:)`` and ``Pipeline/detach(_:)``.
public enum GraphError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The pipeline has no node.
  case empty
  /// The named nodes form a cycle.
  case cycle([String])
  /// A node that consumes input has no incoming edge.
  case unconnectedInput(String)
  /// A node that produces output has no outgoing edge.
  case unconnectedOutput(String)
  /// An edge joins nodes on different executors without being declared a thread boundary.
  case undeclaredThreadBoundary(from: String, to: String)
  /// The pipeline was already started; its shape is fixed.
  case alreadyStarted
  /// A branch attached to a running pipeline feeds one of its running nodes (a branch only adds
  /// consumers).
  case intoRunningNode(from: String, to: String)
  /// A node to detach is not part of the pipeline.
  case notInPipeline(String)
  /// A detached branch feeds a node that stays.
  case feedsRemainingNode(from: String, to: String)
  /// The pipeline has stopped: no branch joins it.
  case stopped

  /// A sentence saying what is wrong and where.
  public var description: String {
    switch self {
    case .empty: "the pipeline has no node"
    case .cycle(let names): "the graph has a cycle through \(names.joined(separator: " → "))"
    case .unconnectedInput(let name): "node \(name) has an input but nothing is connected to it"
    case .unconnectedOutput(let name): "node \(name) has an output but it is connected to nothing"
    case .undeclaredThreadBoundary(let from, let to):
      "edge \(from) → \(to) joins two executors; connect it with threadBoundary: true"
    case .alreadyStarted: "the pipeline has already started"
    case .intoRunningNode(let from, let to):
      "edge \(from) → \(to) feeds a running node; a branch attached while the pipeline runs only adds consumers"
    case .notInPipeline(let name): "node \(name) is not part of the pipeline"
    case .feedsRemainingNode(let from, let to):
      "edge \(from) → \(to) leads from the detached nodes to one that stays; detach what it feeds too"
    case .stopped: "the pipeline has stopped"
    }
  }
}
