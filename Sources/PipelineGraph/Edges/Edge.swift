import Synchronization

/// An entry of an edge's queue: data or an in-band event, in one order.
///
/// Items are stored type-erased: the engine's generic code runs unspecialized for node types defined in
/// other modules, and a non-generic queue keeps generic metadata look-ups off the hot path. Types are
/// still checked at compile time by ``Pipeline/connect(_:to:limits:threadBoundary:)``.
enum EdgeEntry {
  case item(Any)
  case event(PipelineEvent)
}

/// A bounded queue between two nodes.
///
/// An edge inside one executor is touched by that executor only and takes no lock. A thread-boundary
/// edge is shared by two executors and every access takes its mutex; its entries carry the producer's
/// flush generation so a consumer that has already flushed drops what a not-yet-flushed producer sent.
final class Edge: @unchecked Sendable {
  private struct Slot {
    var generation: Int
    var entry: EdgeEntry
  }
  private struct State {
    var queue: RingBuffer<Slot>
    var bytes = 0
    var duration: Int64 = 0
    var highWaterItems = 0
    var highWaterBytes = 0
    var pushed = 0
  }

  let limits: EdgeLimits
  let isThreadBoundary: Bool
  let typeName: String
  unowned let producer: NodeCore
  unowned let consumer: NodeCore
  private var state: State
  private let lock = Mutex<Void>(())
  private let weigh: ((Any) -> (bytes: Int, duration: Int64))?

  init(
    limits: EdgeLimits, isThreadBoundary: Bool, typeName: String, producer: NodeCore, consumer: NodeCore,
    weigh: ((Any) -> (bytes: Int, duration: Int64))?
  ) {
    self.limits = limits
    self.isThreadBoundary = isThreadBoundary
    self.typeName = typeName
    self.producer = producer
    self.consumer = consumer
    self.weigh = weigh
    state = State(queue: RingBuffer(capacity: limits.items))
  }

  @inline(__always)
  private func locked<R>(_ body: (inout State) -> R) -> R {
    if isThreadBoundary {
      return lock.withLock { _ in body(&state) }
    }
    return body(&state)
  }

  var isFull: Bool { locked { Self.full($0, limits) } }

  var isEmpty: Bool { locked { $0.queue.isEmpty } }

  /// Appends an entry; returns true when the edge was empty before (the consumer may need waking).
  @discardableResult
  func push(_ entry: EdgeEntry, generation: Int) -> Bool {
    var weight: (bytes: Int, duration: Int64) = (0, 0)
    if let weigh, case .item(let item) = entry { weight = weigh(item) }
    return locked { state in
      let wasEmpty = state.queue.isEmpty
      state.queue.append(Slot(generation: generation, entry: entry))
      state.bytes += weight.bytes
      state.duration += weight.duration
      state.pushed &+= 1
      if state.queue.count > state.highWaterItems { state.highWaterItems = state.queue.count }
      if state.bytes > state.highWaterBytes { state.highWaterBytes = state.bytes }
      return wasEmpty
    }
  }

  /// Removes the oldest entry of `generation` or newer (older ones are dropped on the way). Sets
  /// `wasFull` when the edge was full before (the producer may need waking).
  func pop(currentGeneration generation: Int, wasFull: inout Bool) -> EdgeEntry? {
    locked { state in
      while !state.queue.isEmpty {
        wasFull = Self.full(state, limits)
        let slot = state.queue.popFirst()!
        if let weigh, case .item(let item) = slot.entry {
          let weight = weigh(item)
          state.bytes -= weight.bytes
          state.duration -= weight.duration
        }
        if slot.generation >= generation { return slot.entry }
      }
      return nil
    }
  }

  @inline(__always)
  private static func full(_ state: State, _ limits: EdgeLimits) -> Bool {
    if state.queue.count >= limits.items { return true }
    if let maxBytes = limits.bytes, state.bytes >= maxBytes { return true }
    if let maxDuration = limits.durationMicroseconds, state.duration >= maxDuration { return true }
    return false
  }

  /// Drops the entries tagged with a generation older than `generation`.
  func removeEntries(olderThan generation: Int) {
    locked { state in
      state.queue.removeAll { $0.generation < generation }
      state.bytes = 0
      state.duration = 0
      guard let weigh else { return }
      var remaining = state.queue
      while let slot = remaining.popFirst() {
        if case .item(let item) = slot.entry {
          let weight = weigh(item)
          state.bytes += weight.bytes
          state.duration += weight.duration
        }
      }
    }
  }

  func snapshot() -> EdgeStatistics {
    locked { state in
      EdgeStatistics(
        from: producer.name, to: consumer.name, type: typeName, limits: limits,
        isThreadBoundary: isThreadBoundary, depth: state.queue.count, highWaterItems: state.highWaterItems,
        highWaterBytes: state.highWaterBytes, itemsPassed: state.pushed)
    }
  }
}
