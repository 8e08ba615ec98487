import Synchronization

/// An array many threads may append to; the test reads it afterwards.
public final class LockedArray<Element: Sendable>: Sendable {
  private let storage = Mutex<[Element]>([])

  /// Creates an empty array.
  public init() {}

  /// Appends `element`.
  public func append(_ element: Element) { storage.withLock { $0.append(element) } }

  /// A copy of the elements.
  public var values: [Element] { storage.withLock { $0 } }

  /// The number of elements.
  public var count: Int { storage.withLock { $0.count } }
}
