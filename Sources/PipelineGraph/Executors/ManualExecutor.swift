import Foundation

/// An executor that runs nothing until the test calls ``runUntilIdle()``: deterministic, one thread at a
/// time.
///
/// Jobs submitted from any thread are queued; ``runUntilIdle()`` runs them, and the jobs they submit, on
/// the calling thread until the queue is empty and the idle handler (a free-running clock) adds nothing.
/// ``runHere(_:)`` lets another thread run one body as if it were a job (a `Replay`'s command made off
/// the test's thread): runs and bodies never overlap, each waits for the other.
/// When a node hands work to another thread (a worker pool, a network thread), ``waitForWork(timeout:)`` blocks
/// until that thread posts its completion — no sleeping, no timing.
///
/// No states: it may be driven again at any time. Every method except ``runUntilIdle()`` is thread-safe;
/// jobs and the idle handler run on the thread that calls ``runUntilIdle()``.
public final class ManualExecutor: PipelineExecutor {
  private struct State {
    var jobs = RingBuffer<@Sendable () -> Void>(capacity: 64)
    var running = false
    /// The thread running jobs or a ``runHere(_:)`` body (`pthread_t`); meaningful while `running`.
    var runner: UInt = 0
    var idleHandler: (@Sendable () -> Void)?
  }
  private let condition = NSCondition()
  // Guarded by `condition`.
  nonisolated(unsafe) private var state = State()

  /// Creates an empty executor.
  public init() {}

  private func locked<Result>(_ body: (inout State) -> Result) -> Result {
    condition.lock()
    defer { condition.unlock() }
    return body(&state)
  }

  /// Queues a job for the next ``runUntilIdle()``.
  public func execute(_ job: @escaping @Sendable () -> Void) {
    condition.lock()
    state.jobs.append(job)
    condition.broadcast()
    condition.unlock()
  }

  /// True when no job is queued or running.
  public var isIdle: Bool { locked { $0.jobs.isEmpty && !$0.running } }

  /// Sets the handler called whenever the queue runs dry during ``runUntilIdle()``.
  public func setIdleHandler(_ handler: (@Sendable () -> Void)?) {
    locked { $0.idleHandler = handler }
  }

  /// The number of jobs queued and not yet run.
  public var pendingJobCount: Int { locked { $0.jobs.count } }

  /// Blocks until a job is queued (posted by another thread), or `timeout` passes; returns whether one is.
  @discardableResult
  public func waitForWork(timeout: Duration = .seconds(30)) -> Bool {
    let deadline = Date().addingTimeInterval(Double(timeout.microseconds) / 1e6)
    condition.lock()
    defer { condition.unlock() }
    while state.jobs.isEmpty {
      if !condition.wait(until: deadline) { return !state.jobs.isEmpty }
    }
    return true
  }

  /// Runs queued jobs, and the jobs they queue, until none is left. Returns the number of jobs run.
  ///
  /// - Important: call it from one thread at a time (the test's); re-entrant calls from a job return 0. A
  ///   call while another thread runs a ``runHere(_:)`` body waits for the body to end.
  @discardableResult
  public func runUntilIdle() -> Int {
    guard enter() else { return 0 }
    var count = 0
    while true {
      while let job = locked({ $0.jobs.popFirst() }) {
        job()
        count += 1
      }
      let handler = locked { state -> (@Sendable () -> Void)? in
        state.running = false
        condition.broadcast()
        return state.idleHandler
      }
      handler?()
      if locked({ $0.jobs.isEmpty }) || !enter() { return count }
    }
  }

  /// Marks the executor as run by this thread: false when this thread runs it already (a re-entrant
  /// call); while another thread runs it (a ``runHere(_:)`` body), waits until it has finished.
  private func enter() -> Bool {
    let me = UInt(pthread_self())
    condition.lock()
    defer { condition.unlock() }
    while state.running {
      if state.runner == me { return false }
      condition.wait()
    }
    state.running = true
    state.runner = me
    return true
  }

  /// Runs `body` on the calling thread as one of the executor's jobs and returns true: at once when this
  /// thread drives it (inside a job) or nothing does; while another thread runs it (jobs, or a body of
  /// its own), once that thread has let go. No run starts until `body` returns. Never refuses: a manual
  /// executor has no thread that would run a job queued instead.
  public func runHere(_ body: () -> Void) -> Bool {
    let me = UInt(pthread_self())
    condition.lock()
    if state.running && state.runner == me {
      condition.unlock()
      body()
      return true
    }
    while state.running { condition.wait() }
    state.running = true
    state.runner = me
    condition.unlock()
    body()
    locked { state in
      state.running = false
      condition.broadcast()
    }
    return true
  }
}
