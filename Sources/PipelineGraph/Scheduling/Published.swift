import Synchronization

/// A value one side changes now and then and another side reads on every item: the reader takes no
/// lock unless the value changed since it last looked (a version counter says so).
///
/// A writer replaces the value with ``publish(_:)``; a reader keeps a ``Published/Reader`` and calls
/// ``Reader/current`` per item. A reader may see a new value one item late (as if the change had come
/// an item later), never a torn one.
///
/// ```swift
/// let recorders = Published<[ReplayRecorder]>([])
/// var reader = recorders.reader()        // on the node's executor
/// for recorder in reader.current { … }   // per packet: one atomic load
/// recorders.publish(newList)             // from any thread
/// ```
public final class Published<Value: Sendable>: Sendable {
  private let version = Atomic(0)
  private let storage: Locked<Value>

  /// A published `value`.
  public init(_ value: Value) { storage = Locked(value) }

  /// Replaces the value; readers see it at their next look.
  public func publish(_ value: Value) {
    storage.withLock { $0 = value }
    version.add(1, ordering: .releasing)
  }

  /// Changes the value in place (one writer's change cannot undo another's made meanwhile); readers see
  /// it at their next look.
  public func update(_ change: (inout Value) -> Void) {
    storage.withLock { change(&$0) }
    version.add(1, ordering: .releasing)
  }

  /// The value now (takes the lock).
  public var value: Value { storage.withLock { $0 } }

  /// A reader that caches the value until it changes.
  public func reader() -> Reader { Reader(self) }

  /// One reader's cached view: not shared between threads (keep one per node, on its executor).
  public struct Reader {
    private let source: Published<Value>
    private var seen: Int
    private var cached: Value

    init(_ source: Published<Value>) {
      self.source = source
      seen = source.version.load(ordering: .acquiring)
      cached = source.value
    }

    /// The value, read again only when a writer published since the last look.
    public var current: Value {
      mutating get {
        let now = source.version.load(ordering: .acquiring)
        if now != seen {
          seen = now
          cached = source.value
        }
        return cached
      }
    }
  }
}
