/// An entry of an edge's queue: data or an in-band event, in one order.
@usableFromInline
enum EdgeEntry<Item> {
  case item(Item)
  case event(EventBox)
}

/// An event behind one reference, so that a queue entry is as small and cheap to move as an item.
@usableFromInline
final class EventBox {
  @usableFromInline let event: PipelineEvent
  @usableFromInline init(_ event: PipelineEvent) { self.event = event }
}

/// What the engine needs from an edge without knowing its item type: validation, flushing, statistics.
protocol ErasedEdge: AnyObject, Sendable {
  var limits: EdgeLimits { get }
  var isThreadBoundary: Bool { get }
  var producer: NodeCore { get }
  var consumer: NodeCore { get }
  func pushEvent(_ event: PipelineEvent, generation: Int) -> Bool
  func removeEntries(olderThan generation: Int)
  func snapshot() -> EdgeStatistics
}

/// A bounded queue of `Item`s between two nodes.
///
/// An edge inside one executor is touched by that executor only and takes no lock. A thread-boundary
/// edge is shared by two executors and every access takes its lock; its entries carry the producer's
/// flush generation so a consumer that has already flushed drops what a not-yet-flushed producer sent.
///
/// The push and pop paths are inlinable: they are specialized in the module that defines the nodes, so
/// the queue holds the items themselves, without boxing or casts.
@usableFromInline
final class Edge<Item>: ErasedEdge, @unchecked Sendable {
  @usableFromInline
  struct Slot {
    @usableFromInline var generation: Int
    @usableFromInline var entry: EdgeEntry<Item>
    @inlinable init(generation: Int, entry: EdgeEntry<Item>) {
      self.generation = generation
      self.entry = entry
    }
  }

  let limits: EdgeLimits
  @usableFromInline let isThreadBoundary: Bool
  @usableFromInline let maxItems: Int
  @usableFromInline let maxBytes: Int
  @usableFromInline let maxDuration: Int64
  unowned let producer: NodeCore
  @usableFromInline unowned let consumer: NodeCore
  @usableFromInline let lock = Lock()
  @usableFromInline let weigh: ((Item) -> (bytes: Int, duration: Int64))?
  @exclusivity(unchecked) @usableFromInline var queue: RingBuffer<Slot>
  @exclusivity(unchecked) @usableFromInline var bytes = 0
  @exclusivity(unchecked) @usableFromInline var duration: Int64 = 0
  @exclusivity(unchecked) @usableFromInline var highWaterItems = 0
  @exclusivity(unchecked) @usableFromInline var highWaterBytes = 0
  @exclusivity(unchecked) @usableFromInline var pushed = 0

  init(
    limits: EdgeLimits, isThreadBoundary: Bool, producer: NodeCore, consumer: NodeCore,
    weigh: ((Item) -> (bytes: Int, duration: Int64))?
  ) {
    self.limits = limits
    self.isThreadBoundary = isThreadBoundary
    maxItems = limits.items
    maxBytes = limits.bytes ?? .max
    maxDuration = limits.duration?.microseconds ?? .max
    self.producer = producer
    self.consumer = consumer
    self.weigh = weigh
    queue = RingBuffer(capacity: limits.items)
  }

  @inlinable
  @inline(__always)
  func locked<Result>(_ body: () -> Result) -> Result {
    if isThreadBoundary { return lock.withLock(body) }
    return body()
  }

  @inlinable
  @inline(__always)
  func lockIfShared() { if isThreadBoundary { lock.lock() } }

  @inlinable
  @inline(__always)
  func unlockIfShared() { if isThreadBoundary { lock.unlock() } }

  @inlinable
  @inline(__always)
  var isFullUnlocked: Bool { queue.count >= maxItems || bytes >= maxBytes || duration >= maxDuration }

  /// True when the producer must wait.
  @inlinable
  var isFull: Bool {
    lockIfShared()
    defer { unlockIfShared() }
    return isFullUnlocked
  }

  /// Appends an entry; returns true when the edge was empty before (the consumer may need waking).
  @inlinable
  @discardableResult
  func push(_ entry: EdgeEntry<Item>, generation: Int) -> Bool {
    var weight: (bytes: Int, duration: Int64) = (0, 0)
    if let weigh, case .item(let item) = entry { weight = weigh(item) }
    lockIfShared()
    defer { unlockIfShared() }
    let wasEmpty = queue.isEmpty
    queue.append(Slot(generation: generation, entry: entry))
    bytes &+= weight.bytes
    duration &+= weight.duration
    pushed &+= 1
    if queue.count > highWaterItems { highWaterItems = queue.count }
    if bytes > highWaterBytes { highWaterBytes = bytes }
    return wasEmpty
  }

  func pushEvent(_ event: PipelineEvent, generation: Int) -> Bool {
    push(.event(EventBox(event)), generation: generation)
  }

  /// Removes the oldest entry of `generation` or newer (older ones are dropped on the way). Sets
  /// `wasFull` when the edge was full before (the producer may need waking).
  @inlinable
  func pop(currentGeneration generation: Int, wasFull: inout Bool) -> EdgeEntry<Item>? {
    lockIfShared()
    defer { unlockIfShared() }
    while let slot = queue.popFirst() {
      if !wasFull { wasFull = queue.count + 1 >= maxItems || bytes >= maxBytes || duration >= maxDuration }
      if let weigh, case .item(let item) = slot.entry {
        let weight = weigh(item)
        bytes &-= weight.bytes
        duration &-= weight.duration
      }
      if slot.generation >= generation { return slot.entry }
    }
    return nil
  }

  /// Wakes the consumer's executor (after a push onto an empty thread-boundary edge).
  @usableFromInline
  func wakeConsumer() { consumer.partition?.schedule() }

  /// Wakes the producer's executor (after a pop from a full thread-boundary edge).
  @usableFromInline
  func wakeProducer() { producer.partition?.schedule() }

  func removeEntries(olderThan generation: Int) {
    locked {
      queue.removeAll { $0.generation < generation }
      bytes = 0
      duration = 0
      guard let weigh else { return }
      queue.forEach { slot in
        if case .item(let item) = slot.entry {
          let weight = weigh(item)
          bytes += weight.bytes
          duration += weight.duration
        }
      }
    }
  }

  func snapshot() -> EdgeStatistics {
    locked {
      EdgeStatistics(
        from: producer.name, to: consumer.name, type: String(describing: Item.self), limits: limits,
        isThreadBoundary: isThreadBoundary, depth: queue.count, highWaterItems: highWaterItems,
        highWaterBytes: highWaterBytes, itemsPassed: pushed)
    }
  }
}
