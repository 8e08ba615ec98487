import Glibc

/// A pthread mutex owned by a class (so its address is stable).
///
/// Used instead of `Synchronization.Mutex`, whose futex implementation the thread sanitizer does not
/// see: with it every correctly locked access would be reported as a race.
@usableFromInline
final class Lock: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

  @usableFromInline
  init() {
    mutex = .allocate(capacity: 1)
    let status = pthread_mutex_init(mutex, nil)
    precondition(status == 0, "pthread_mutex_init failed: \(status)")
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  @inlinable
  func lock() { pthread_mutex_lock(mutex) }

  @inlinable
  func unlock() { pthread_mutex_unlock(mutex) }

  @inlinable
  func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}
