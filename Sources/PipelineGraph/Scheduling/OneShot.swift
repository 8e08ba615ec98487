import Foundation

/// A value set once, from any thread, and awaited by blocking or async callers (a run's end, a job's
/// result).
package final class OneShot<Value: Sendable>: @unchecked Sendable {
  private let condition = NSCondition()
  // Guarded by `condition`.
  private var value: Value?
  private var waiters: [CheckedContinuation<Value, Never>] = []

  package init() {}

  /// Sets the value and wakes every waiter; later calls change nothing.
  package func set(_ newValue: Value) {
    let waiting = condition.withLock { () -> [CheckedContinuation<Value, Never>] in
      guard value == nil else { return [] }
      value = newValue
      condition.broadcast()
      defer { waiters = [] }
      return waiters
    }
    for waiter in waiting { waiter.resume(returning: newValue) }
  }

  /// The value, if set.
  package var current: Value? { condition.withLock { value } }

  /// Blocks until the value is set.
  package func wait() -> Value {
    condition.withLock {
      while value == nil { condition.wait() }
      return value!
    }
  }

  /// Blocks until the value is set or `timeout` has passed (nil then).
  package func wait(timeout: Duration) -> Value? {
    let deadline = Date(
      timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
    return condition.withLock {
      while value == nil {
        if !condition.wait(until: deadline) { break }
      }
      return value
    }
  }

  /// Resumes once the value is set.
  package func value() async -> Value {
    await withCheckedContinuation { continuation in
      let ready = condition.withLock { () -> Value? in
        if let value { return value }
        waiters.append(continuation)
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }
}
