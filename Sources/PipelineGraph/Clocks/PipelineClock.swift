import Synchronization

/// The time source of a pipeline. Nodes read time only through their context's clock, never `Date()`.
public protocol PipelineClock: AnyObject, Sendable {
  /// The current time. Never goes backwards.
  var now: ClockInstant { get }

  /// Runs `job` on `executor` once the clock reaches `deadline` (at once if it has already passed).
  /// Timers with equal deadlines fire in the order they were scheduled.
  @discardableResult
  func schedule(
    at deadline: ClockInstant, on executor: any PipelineExecutor, _ job: @escaping @Sendable () -> Void
  ) -> ClockTimer
}

/// A scheduled timer; cancelling it keeps its job from running if it has not been submitted yet.
public final class ClockTimer: Sendable {
  private let cancelled = Atomic(false)

  /// Creates a timer handle.
  public init() {}

  /// Cancels the timer. Idempotent; callable from any thread.
  public func cancel() { cancelled.store(true, ordering: .relaxed) }

  /// True once ``cancel()`` was called.
  public var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}
