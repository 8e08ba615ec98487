import Synchronization

/// The time source of a pipeline. Nodes read time only through their context's clock, never `Date()`.
///
/// Implementations are thread-safe (any thread may read ``now`` or schedule) and have no lifecycle; a
/// timer's job runs on the executor it was scheduled on.
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
