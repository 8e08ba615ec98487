import Glibc
import Synchronization

/// A pthread mutex owned by a class (so its address is stable).
///
/// Used instead of `Synchronization.Mutex`, whose futex implementation the thread sanitizer does not
/// see: with it every correctly locked access would be reported as a race.
@usableFromInline
package final class Lock: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
  /// Whether ``LockTally`` counts it: false for a test double's lock (the virtual clock stands in for the
  /// monotonic clock, which takes none), so that a count measures the path, not its test harness.
  @usableFromInline let counted: Bool

  @usableFromInline
  package init(counted: Bool = true) {
    self.counted = counted
    mutex = .allocate(capacity: 1)
    let status = pthread_mutex_init(mutex, nil)
    precondition(status == 0, "pthread_mutex_init failed: \(status)")
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  #if DEBUG
    /// The acquisitions of every `Lock` (and so of every `Locked`) on the thread being watched, in debug
    /// builds: a test counts what a path takes on its own thread (``LockTally``). Release builds count
    /// nothing.
    @usableFromInline static let acquisitions = Atomic<Int>(0)
    /// The watched thread (`pthread_t`; 0: none).
    @usableFromInline static let watched = Atomic<UInt>(0)

    @inlinable func count() {
      guard counted else { return }
      let thread = Self.watched.load(ordering: .relaxed)
      if thread != 0 && pthread_equal(thread, pthread_self()) != 0 { Self.acquisitions.add(1, ordering: .relaxed) }
    }
  #endif

  @inlinable
  package func lock() {
    #if DEBUG
      count()
    #endif
    pthread_mutex_lock(mutex)
  }

  @inlinable
  package func unlock() { pthread_mutex_unlock(mutex) }

  @inlinable
  package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
    #if DEBUG
      count()
    #endif
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}

#if DEBUG
  /// Counts the locks the calling thread takes (any `Lock` or `Locked` of the engine and the layers above
  /// it), in debug builds: a deterministic test, whose graph runs on its own thread, measures what a path
  /// costs. One tally at a time in the process.
  package enum LockTally {
    /// Runs `body` and returns how many locks this thread took during it.
    package static func counting(_ body: () throws -> Void) rethrows -> Int {
      let before = Lock.acquisitions.load(ordering: .relaxed)
      Lock.watched.store(UInt(pthread_self()), ordering: .relaxed)
      defer { Lock.watched.store(0, ordering: .relaxed) }
      try body()
      return Lock.acquisitions.load(ordering: .relaxed) - before
    }
  }
#endif
