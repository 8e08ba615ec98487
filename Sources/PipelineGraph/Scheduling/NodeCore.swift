/// The engine's bookkeeping for one node, shared by its typed box, its context and its edges.
///
/// Confined to the node's executor, like the node itself; `@unchecked Sendable` only so that timer and
/// completion jobs (which run on that executor) can capture it.
@usableFromInline
final class NodeCore: @unchecked Sendable {
  @usableFromInline
  enum Phase: Equatable {
    case idle, running, finished, discarding, stopped
  }

  let name: String
  let typeName: String
  let index: Int
  let executor: any PipelineExecutor
  /// Set once when the pipeline starts; the pipeline owns its partitions for as long as nodes run.
  unowned(unsafe) var partition: Partition?
  /// The flush generation the node is in (its partition's, copied here to keep the hot path short).
  @usableFromInline var generation = 0
  @usableFromInline var phase = Phase.idle
  @usableFromInline var inputSuspended = false
  var sourceWaiting = false
  /// The node asked to hold its end of stream (work still in flight).
  var holdsEndOfStream = false
  /// `finish` ran while the end of stream was held: send it on release.
  var finishPending = false
  /// A stepping node's `finish` ran: its end of stream follows once its pending work is done.
  @usableFromInline var endsAfterSteps = false
  @usableFromInline var endedInputs = 0
  @usableFromInline var statistics: NodeStatistics

  init(name: String, typeName: String, index: Int, executor: any PipelineExecutor) {
    self.name = name
    self.typeName = typeName
    self.index = index
    self.executor = executor
    statistics = NodeStatistics(name: name, type: typeName)
  }

}
