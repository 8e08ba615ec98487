import Dispatch
import Foundation

/// Real time from the system's monotonic clock: what production replay runs on.
///
/// Stateless and thread-safe. A due timer's job is submitted from a Dispatch global-queue thread to its
/// executor, where it runs.
public final class MonotonicClock: PipelineClock {
  private let origin: Int64

  /// A clock whose origin is the moment of its creation.
  public init() { origin = Self.systemMicroseconds() }

  /// Microseconds since the clock was created.
  public var now: ClockInstant { ClockInstant(microseconds: Self.systemMicroseconds() - origin) }

  /// Submits `job` to `executor` when the deadline passes (timers run on a Dispatch timer).
  @discardableResult
  public func schedule(
    at deadline: ClockInstant, on executor: any PipelineExecutor, _ job: @escaping @Sendable () -> Void
  ) -> ClockTimer {
    let timer = ClockTimer()
    let delay = deadline.microseconds - now.microseconds
    let fire: @Sendable () -> Void = {
      if !timer.isCancelled { executor.execute(job) }
    }
    if delay <= 0 {
      fire()
    } else {
      DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(delay)), execute: fire)
    }
    return timer
  }

  package static func systemMicroseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
  }
}
