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
    let manual = manualExecutors
    if manual.isEmpty {
      run.waitUntilEnded()
    } else {
      while !run.hasEnded {
        let ran = manual.reduce(0) { $0 + $1.runUntilIdle() }
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
    onEndOfStream = {
      endOfStream?()
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
private final class RunObserver: @unchecked Sendable {
  private let condition = NSCondition()
  // Guarded by `condition`.
  private var _failures: [NodeFailure] = []
  private var _ended = false
  private var _reachedEndOfStream = false
  private var _stopped = false
  private var endWaiters: [CheckedContinuation<Void, Never>] = []
  private var stopWaiters: [CheckedContinuation<Void, Never>] = []

  func record(_ failure: NodeFailure) { condition.withLock { _failures.append(failure) } }

  func end(reachedEndOfStream: Bool) {
    let waiters = condition.withLock { () -> [CheckedContinuation<Void, Never>] in
      guard !_ended else { return [] }
      _ended = true
      _reachedEndOfStream = reachedEndOfStream
      condition.broadcast()
      defer { endWaiters = [] }
      return endWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  func markStopped() {
    let waiters = condition.withLock { () -> [CheckedContinuation<Void, Never>] in
      _stopped = true
      condition.broadcast()
      defer { stopWaiters = [] }
      return stopWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  var hasEnded: Bool { condition.withLock { _ended } }
  var reachedEndOfStream: Bool { condition.withLock { _reachedEndOfStream } }
  var failures: [NodeFailure] { condition.withLock { _failures } }

  func waitUntilEnded() { condition.withLock { while !_ended { condition.wait() } } }
  func waitUntilStopped() { condition.withLock { while !_stopped { condition.wait() } } }

  func ended() async {
    await withCheckedContinuation { continuation in
      let now = condition.withLock { () -> Bool in
        if _ended { return true }
        endWaiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  func stopped() async {
    await withCheckedContinuation { continuation in
      let now = condition.withLock { () -> Bool in
        if _stopped { return true }
        stopWaiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }
}
