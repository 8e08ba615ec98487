import Foundation
import Synchronization

/// An executor with one dedicated thread: the production executor.
///
/// Call ``shutdown()`` when done: the thread finishes the queued jobs and exits.
///
/// States: running (from `init`) → shut down; afterwards jobs are dropped and ``shutdown()`` returns at
/// once. Thread-safe: any method from any thread, except ``shutdown()`` from a job. Jobs and the idle
/// handler run on its thread.
public final class ThreadExecutor: PipelineExecutor {
  private struct State {
    var jobs = RingBuffer<@Sendable () -> Void>(capacity: 64)
    var running = false
    var shuttingDown = false
    var idleHandler: (@Sendable () -> Void)?
  }
  private let condition = NSCondition()
  // Guarded by `condition`; a Mutex cannot be waited on.
  nonisolated(unsafe) private var state = State()
  private let done = DispatchSemaphore(value: 0)
  /// The executor's thread (`pthread_t`), once it has started; 0 before.
  private let thread = Atomic<UInt>(0)

  /// Starts the executor's thread, named `name` (visible in debuggers and `top -H`).
  public init(name: String = "tipipe.executor") {
    let thread = Thread { [self] in loop() }
    thread.name = name
    thread.start()
  }

  /// Queues a job. Jobs queued after ``shutdown()`` are dropped.
  public func execute(_ job: @escaping @Sendable () -> Void) {
    condition.lock()
    if !state.shuttingDown {
      state.jobs.append(job)
      condition.signal()
    }
    condition.unlock()
  }

  /// True when no job is queued or running.
  public var isIdle: Bool {
    condition.lock()
    defer { condition.unlock() }
    return state.jobs.isEmpty && !state.running
  }

  /// Sets the handler the thread calls each time its queue runs dry.
  public func setIdleHandler(_ handler: (@Sendable () -> Void)?) {
    condition.lock()
    state.idleHandler = handler
    condition.unlock()
  }

  /// Runs `body` at once when called from a job of this executor (its thread); else returns false.
  public func runHere(_ body: () -> Void) -> Bool {
    let own = thread.load(ordering: .acquiring)
    guard own != 0, pthread_equal(pthread_t(own), pthread_self()) != 0 else { return false }
    body()
    return true
  }

  /// Runs the queued jobs, then ends the thread; returns once it has ended. Do not call from a job.
  public func shutdown() {
    condition.lock()
    let first = !state.shuttingDown
    state.shuttingDown = true
    condition.signal()
    condition.unlock()
    if first { done.wait() }
  }

  private func loop() {
    thread.store(UInt(pthread_self()), ordering: .releasing)
    condition.lock()
    while true {
      if let job = state.jobs.popFirst() {
        state.running = true
        condition.unlock()
        job()
        condition.lock()
        state.running = false
        continue
      }
      if state.shuttingDown { break }
      if let handler = state.idleHandler {
        condition.unlock()
        handler()
        condition.lock()
        if !state.jobs.isEmpty { continue }
      }
      if state.shuttingDown { break }
      condition.wait()
    }
    condition.unlock()
    done.signal()
  }
}
