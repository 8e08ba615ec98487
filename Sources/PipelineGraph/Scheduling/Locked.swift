import Glibc

/// A value guarded by a ``Lock`` (a pthread mutex, which the thread sanitizer sees, unlike
/// `Synchronization.Mutex`): the package's lock for state shared between threads.
package final class Locked<Value>: @unchecked Sendable {
  private let lock: Lock
  private var value: Value

  /// `counted`: whether ``LockTally`` counts its acquisitions (false only for a test double's state).
  package init(_ value: Value, counted: Bool = true) {
    self.value = value
    lock = Lock(counted: counted)
  }

  package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    try lock.withLock { try body(&value) }
  }
}
