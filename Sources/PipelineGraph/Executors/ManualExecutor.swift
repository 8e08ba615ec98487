import Synchronization

/// An executor that runs nothing until the test calls ``runUntilIdle()``: deterministic, single-threaded.
///
/// Jobs submitted from any thread are queued; ``runUntilIdle()`` runs them, and the jobs they submit, on
/// the calling thread until the queue is empty and the idle handler (a free-running clock) adds nothing.
public final class ManualExecutor: PipelineExecutor {
  private struct State {
    var jobs = RingBuffer<@Sendable () -> Void>(capacity: 64)
    var running = false
    var idleHandler: (@Sendable () -> Void)?
  }
  private let state = Locked(State())

  /// Creates an empty executor.
  public init() {}

  /// Queues a job for the next ``runUntilIdle()``.
  public func execute(_ job: @escaping @Sendable () -> Void) {
    state.withLock { $0.jobs.append(job) }
  }

  /// True when no job is queued or running.
  public var isIdle: Bool { state.withLock { $0.jobs.isEmpty && !$0.running } }

  /// Sets the handler called whenever the queue runs dry during ``runUntilIdle()``.
  public func setIdleHandler(_ handler: (@Sendable () -> Void)?) {
    state.withLock { $0.idleHandler = handler }
  }

  /// The number of jobs queued and not yet run.
  public var pendingJobCount: Int { state.withLock { $0.jobs.count } }

  /// Runs queued jobs, and the jobs they queue, until none is left. Returns the number of jobs run.
  ///
  /// - Important: call it from one thread at a time (the test's); re-entrant calls from a job return 0.
  @discardableResult
  public func runUntilIdle() -> Int {
    let entered = state.withLock { state -> Bool in
      if state.running { return false }
      state.running = true
      return true
    }
    guard entered else { return 0 }
    var count = 0
    while true {
      while let job = state.withLock({ $0.jobs.popFirst() }) {
        job()
        count += 1
      }
      let handler = state.withLock { state -> (@Sendable () -> Void)? in
        state.running = false
        return state.idleHandler
      }
      handler?()
      let more = state.withLock { state -> Bool in
        if state.jobs.isEmpty { return false }
        state.running = true
        return true
      }
      if !more { return count }
    }
  }
}
