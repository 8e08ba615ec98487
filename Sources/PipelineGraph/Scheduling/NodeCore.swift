/// The engine's bookkeeping for one node, shared by its typed box, its context and its edges.
///
/// Confined to the node's executor, like the node itself; `@unchecked Sendable` only so that timer and
/// completion jobs (which run on that executor) can capture it.
///
/// The engine's per-item state (here, in ``Edge``, ``NodeBox``, ``NodeContext``, ``Partition`` and
/// ``RingBuffer``) is marked `@exclusivity(unchecked)`: it is touched by one executor at a time (or under
/// an edge's lock), exclusivity is still checked statically, and the dynamic checks of class properties
/// would cost the engine several times its throughput (Benchmarks/README.md).
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
  /// Set once when the pipeline starts (or the node joins it running); the pipeline owns its partitions
  /// for as long as nodes run.
  unowned(unsafe) var partition: Partition?
  /// The box holding the node (which owns this core): how a context or an edge reaches the node's hooks
  /// without the pipeline's list of nodes, which changes while nodes run when branches join or leave.
  unowned(unsafe) var box: (any NodeBoxing)?
  /// The flush generation the node is in (its partition's, copied here to keep the hot path short).
  @exclusivity(unchecked) @usableFromInline var generation = 0
  /// The target of the seek that started ``generation``.
  @exclusivity(unchecked) var seekTarget: MediaTime?
  @exclusivity(unchecked) @usableFromInline var phase = Phase.idle
  @exclusivity(unchecked) @usableFromInline var inputSuspended = false
  @exclusivity(unchecked) @usableFromInline var sourceWaiting = false
  /// The node asked to hold its end of stream (work still in flight).
  @exclusivity(unchecked) var holdsEndOfStream = false
  /// `finish` ran while the end of stream was held: send it on release.
  @exclusivity(unchecked) var finishPending = false
  /// A stepping node's `finish` ran: its end of stream follows once its pending work is done.
  @exclusivity(unchecked) @usableFromInline var endsAfterSteps = false
  @exclusivity(unchecked) @usableFromInline var endedInputs = 0
  @exclusivity(unchecked) @usableFromInline var statistics: NodeStatistics

  init(name: String, typeName: String, index: Int, executor: any PipelineExecutor) {
    self.name = name
    self.typeName = typeName
    self.index = index
    self.executor = executor
    statistics = NodeStatistics(name: name, type: typeName)
  }

}
