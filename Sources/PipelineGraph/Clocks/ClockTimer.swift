import Synchronization

/// A scheduled timer; cancelling it keeps its job from running if it has not been submitted yet.
///
/// States: pending → cancelled (for good). Thread-safe: any thread may cancel or read it.
public final class ClockTimer: Sendable {
  private let cancelled = Atomic(false)

  /// Creates a timer handle.
  public init() {}

  /// Cancels the timer. Idempotent; callable from any thread.
  public func cancel() { cancelled.store(true, ordering: .relaxed) }

  /// True once ``cancel()`` was called.
  public var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}
