/// A growable FIFO ring buffer: amortized O(1) append and removal at the front, storage reused.
struct RingBuffer<Element> {
  private var storage: ContiguousArray<Element?>
  private var head = 0
  private(set) var count = 0

  init(capacity: Int) {
    var size = 8
    while size < capacity { size <<= 1 }
    storage = ContiguousArray(repeating: nil, count: size)
  }

  var isEmpty: Bool { count == 0 }

  var first: Element? { count == 0 ? nil : storage[head] }

  mutating func append(_ element: Element) {
    if count == storage.count { grow() }
    storage[(head &+ count) & (storage.count &- 1)] = element
    count &+= 1
  }

  mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    let element = storage[head]
    storage[head] = nil
    head = (head &+ 1) & (storage.count &- 1)
    count &-= 1
    return element
  }

  /// Removes every element for which `shouldRemove` is true, keeping the order of the rest.
  mutating func removeAll(where shouldRemove: (Element) -> Bool) {
    var kept = RingBuffer(capacity: storage.count)
    while let element = popFirst() {
      if !shouldRemove(element) { kept.append(element) }
    }
    self = kept
  }

  private mutating func grow() {
    var bigger = ContiguousArray<Element?>(repeating: nil, count: storage.count * 2)
    for index in 0..<count {
      bigger[index] = storage[(head + index) & (storage.count - 1)]
    }
    storage = bigger
    head = 0
  }
}
