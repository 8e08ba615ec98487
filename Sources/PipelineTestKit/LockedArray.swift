import Foundation

/// An array many threads may append to; the test reads it afterwards.
///
/// No states; thread-safe: append and read from any thread.
public final class LockedArray<Element: Sendable>: @unchecked Sendable {
  // NSLock (pthread) rather than Synchronization.Mutex, so the thread sanitizer sees the locking.
  private let lock = NSLock()
  private var storage: [Element] = []

  /// Creates an empty array.
  public init() {}

  /// Appends `element`.
  public func append(_ element: Element) { lock.withLock { storage.append(element) } }

  /// A copy of the elements.
  public var values: [Element] { lock.withLock { storage } }

  /// The number of elements.
  public var count: Int { lock.withLock { storage.count } }
}
