/// A growable FIFO ring buffer: amortized O(1) append and removal at the front.
///
/// Backed by manually managed memory (elements are moved in and out, never copied), owned by a class so
/// the struct can be copied cheaply; it is used only inside one edge.
@usableFromInline
struct RingBuffer<Element> {
  @usableFromInline
  final class Storage {
    @exclusivity(unchecked) @usableFromInline var base: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) @usableFromInline var capacity: Int
    @exclusivity(unchecked) @usableFromInline var head = 0
    @exclusivity(unchecked) @usableFromInline var count = 0

    @usableFromInline
    init(capacity: Int) {
      var size = 8
      while size < capacity { size <<= 1 }
      self.capacity = size
      base = .allocate(capacity: size)
    }

    deinit {
      for index in 0..<count { (base + ((head + index) & (capacity - 1))).deinitialize(count: 1) }
      base.deallocate()
    }
  }

  @usableFromInline let storage: Storage

  @inlinable
  init(capacity: Int) { storage = Storage(capacity: capacity) }

  @inlinable
  var count: Int { storage.count }

  @inlinable
  var isEmpty: Bool { storage.count == 0 }

  @inlinable
  func append(_ element: consuming Element) {
    let storage = self.storage
    if storage.count == storage.capacity { grow() }
    (storage.base + ((storage.head &+ storage.count) & (storage.capacity &- 1))).initialize(to: element)
    storage.count &+= 1
  }

  @inlinable
  func popFirst() -> Element? {
    let storage = self.storage
    guard storage.count > 0 else { return nil }
    let element = (storage.base + storage.head).move()
    storage.head = (storage.head &+ 1) & (storage.capacity &- 1)
    storage.count &-= 1
    return element
  }

  /// Removes every element for which `shouldRemove` is true, keeping the order of the rest.
  @usableFromInline
  func removeAll(where shouldRemove: (Element) -> Bool) {
    let total = storage.count
    for _ in 0..<total {
      let element = popFirst()!
      if !shouldRemove(element) { append(element) }
    }
  }

  /// Calls `body` on every element, oldest first.
  @usableFromInline
  func forEach(_ body: (Element) -> Void) {
    for index in 0..<storage.count {
      body((storage.base + ((storage.head + index) & (storage.capacity - 1))).pointee)
    }
  }

  @usableFromInline
  func grow() {
    let bigger = UnsafeMutablePointer<Element>.allocate(capacity: storage.capacity * 2)
    for index in 0..<storage.count {
      (bigger + index).moveInitialize(from: storage.base + ((storage.head + index) & (storage.capacity - 1)), count: 1)
    }
    storage.base.deallocate()
    storage.base = bigger
    storage.capacity *= 2
    storage.head = 0
  }
}
