import Foundation

/// A value that arrives once, from any thread — an SDK's completion callback, a job's result — and that a
/// test waits for: `await awaited.value`, or `awaited.wait()` on a thread that may block.
///
/// ```swift
/// let done = Awaited<ExportResult>()
/// let job = try ExportJob(request: request, packets: source, completion: done.fulfill)
/// let result = await done.value
/// ```
///
/// States: waiting → fulfilled (the first value wins; later ones are ignored). Thread-safe.
public final class Awaited<Value: Sendable>: @unchecked Sendable {
  // NSCondition (pthread) rather than Synchronization.Mutex, so the thread sanitizer sees the locking.
  private let condition = NSCondition()
  private var stored: Value?
  private var waiters: [CheckedContinuation<Value, Never>] = []

  /// Creates an empty box.
  public init() {}

  /// Hands the value over (the first call wins). Pass it where a completion handler is expected.
  @Sendable public func fulfill(_ value: Value) {
    condition.lock()
    guard stored == nil else { return condition.unlock() }
    stored = value
    let resumed = waiters
    waiters = []
    condition.broadcast()
    condition.unlock()
    for waiter in resumed { waiter.resume(returning: value) }
  }

  /// The value, once it came.
  public var value: Value {
    get async {
      await withCheckedContinuation { continuation in
        condition.lock()
        if let stored {
          condition.unlock()
          continuation.resume(returning: stored)
        } else {
          waiters.append(continuation)
          condition.unlock()
        }
      }
    }
  }

  /// Blocks until the value came (or `timeout` passed: nil).
  public func wait(timeout: Duration? = nil) -> Value? {
    condition.lock()
    defer { condition.unlock() }
    let deadline = timeout.map {
      Date().addingTimeInterval(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)
    }
    while stored == nil {
      if let deadline {
        guard condition.wait(until: deadline) else { return stored }
      } else {
        condition.wait()
      }
    }
    return stored
  }

  /// True once the value came.
  public var isFulfilled: Bool {
    condition.lock()
    defer { condition.unlock() }
    return stored != nil
  }
}
