import Synchronization

/// The nodes of a pipeline that share one executor, and the loop that runs them.
///
/// The loop visits the nodes in topological order and lets each one work through a batch while it has
/// input and room on its outputs; it repeats until a whole pass does nothing, or queues itself behind
/// the executor's other jobs after ``passesPerRun`` productive passes. A batch moves through the
/// graph in one pass, and a full edge simply makes its producer skip its turn (backpressure).
final class Partition: @unchecked Sendable {
  let executor: any PipelineExecutor
  @exclusivity(unchecked) var boxes: [any NodeBoxing] = []
  /// The flush generation this partition is in; items tagged older are dropped.
  @exclusivity(unchecked) var generation = 0
  @exclusivity(unchecked) var isActive = false
  private let scheduled = Atomic(false)
  unowned let pipeline: Pipeline

  init(executor: any PipelineExecutor, pipeline: Pipeline) {
    self.executor = executor
    self.pipeline = pipeline
  }

  /// Makes sure a run is queued on the executor. Callable from any thread.
  func schedule() {
    if scheduled.exchange(true, ordering: .acquiringAndReleasing) { return }
    executor.execute { [self] in run() }
  }

  /// Passes one run makes before it lets the executor's other jobs go first.
  static let passesPerRun = 2

  /// Runs every node that can make progress until none can, or for ``passesPerRun`` passes: then the
  /// run queues itself behind the executor's other jobs — completions, timers, other partitions — so
  /// that a branch that always has work (a recorder's video encoding a fast file) cannot starve a
  /// source waiting for a completion (its audio's next frames). On the executor only.
  func run() {
    scheduled.store(false, ordering: .releasing)
    guard isActive else { return }
    var progress = true
    var passes = 0
    while progress {
      progress = false
      for box in boxes {
        if pipeline.isStopping { return }
        if box.runBatch() { progress = true }
      }
      passes += 1
      if progress && passes == Self.passesPerRun {
        schedule()
        return
      }
    }
  }
}
