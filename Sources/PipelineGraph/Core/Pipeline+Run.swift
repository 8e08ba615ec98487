import Foundation

extension Pipeline {
  /// Starts the pipeline and returns once every sink has ended or it has stopped (then every node's
  /// `stop` has run). Failures go to the ``errorHandler`` set before, if any (else each one stops the
  /// pipeline) and are also collected in the outcome; ``onEndOfStream`` and ``onStop`` set before are
  /// still called.
  ///
  /// On ``ManualExecutor``s the calling thread drives the graph (worker jobs included), so a test runs
  /// a whole media graph without another thread; on real executors it waits.
  ///
  /// - Parameter patience: with manual executors, how long to wait for a job from another thread
  ///   (a real worker pool) before deciding the graph is stalled.
  /// - Throws: ``GraphError`` from ``start()``; ``PipelineRunError/stalled``.
  public func runToCompletion(patience: Duration = .seconds(60)) throws -> PipelineOutcome {
    let run = prepareRun()
    try start()
    var manual = manualExecutors
    if manual.isEmpty {
      run.waitUntilEnded()
    } else {
      while !run.hasEnded {
        let ran = manual.reduce(0) { $0 + $1.runUntilIdle() }
        // A branch attached meanwhile may run on an executor of its own.
        manual = manualExecutors
        if ran == 0, !run.hasEnded, !manual.contains(where: { $0.waitForWork(timeout: patience) }) {
          stop()
          for executor in manual { executor.runUntilIdle() }
          throw PipelineRunError.stalled
        }
      }
    }
    stop()
    for executor in manual { executor.runUntilIdle() }
    run.waitUntilStopped()
    return PipelineOutcome(reachedEndOfStream: run.reachedEndOfStream, failures: run.failures)
  }

  /// Starts the pipeline and resumes once every sink has ended or it has stopped; see
  /// ``runToCompletion(patience:)`` (whose blocking form a pipeline on manual executors uses).
  public func run() async throws -> PipelineOutcome {
    if !manualExecutors.isEmpty { return try runToCompletion() }
    let run = prepareRun()
    try start()
    await run.ended()
    stop()
    await run.stopped()
    return PipelineOutcome(reachedEndOfStream: run.reachedEndOfStream, failures: run.failures)
  }

  private var manualExecutors: [ManualExecutor] {
    var executors: [ManualExecutor] = []
    let boxes = control.withLock { _ in self.boxes }
    for case let executor as ManualExecutor in boxes.map({ $0.core.executor }) + [self.executor]
    where !executors.contains(where: { $0 === executor }) {
      executors.append(executor)
    }
    if let workers = workers as? ManualExecutor, !executors.contains(where: { $0 === workers }) {
      executors.append(workers)
    }
    return executors
  }

  private func prepareRun() -> RunObserver {
    let run = RunObserver()
    let handler = errorHandler
    errorHandler = { failure in
      run.record(failure)
      return handler?(failure) ?? .stopPipeline
    }
    let endOfStream = onEndOfStream
    onEndOfStream = { generation in
      endOfStream?(generation)
      run.end(reachedEndOfStream: true)
    }
    let stopped = onStop
    onStop = {
      stopped?()
      run.end(reachedEndOfStream: false)
      run.markStopped()
    }
    return run
  }
}

/// What one run has seen so far: filled from the executors, waited for by the caller.
private final class RunObserver: Sendable {
  /// Whether every sink ended (true) or the pipeline stopped first (false): the first to happen.
  let end = OneShot<Bool>()
  let stop = OneShot<Void>()
  private let recorded = Locked<[NodeFailure]>([])

  func record(_ failure: NodeFailure) { recorded.withLock { $0.append(failure) } }
  func end(reachedEndOfStream: Bool) { end.set(reachedEndOfStream) }
  func markStopped() { stop.set(()) }

  var hasEnded: Bool { end.current != nil }
  var reachedEndOfStream: Bool { end.current ?? false }
  var failures: [NodeFailure] { recorded.withLock { $0 } }

  func waitUntilEnded() { _ = end.wait() }
  func waitUntilStopped() { stop.wait() }
  func ended() async { _ = await end.value() }
  func stopped() async { await stop.value() }
}
