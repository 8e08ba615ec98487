import Synchronization

/// A graph of typed nodes joined by bounded edges, run by executors against a clock.
///
/// Build it on one thread (`connect(_:to:limits:threadBoundary:)`, the handlers), then ``start()``.
/// From then on it is driven through ``seek(to:)``, ``flush(seekingTo:)`` and ``stop()``, and branches
/// join and leave it while it runs (``attach(_:)``, ``detach(_:)``): all callable from any thread, taking
/// effect on the executors.
///
/// States: building → started (``start()`` once; again it throws) → stopped (``stop()`` is idempotent;
/// then no node runs and ``flush(seekingTo:)`` changes nothing; a pipeline stopped before it started
/// never starts). ``errorHandler`` and ``onEndOfStream`` run on node executors, ``onStop`` on the
/// executor that stops last.
///
/// ```swift
/// let pipeline = Pipeline(executor: executor, clock: clock)
/// pipeline.connect(source, to: decoder)
/// pipeline.connect(decoder, to: sink, limits: EdgeLimits(items: 8))
/// try pipeline.start()
/// ```
public final class Pipeline: @unchecked Sendable {
  struct Control {
    var started = false
    var generation = 0
    /// The target of the seek that started `generation` (nil for generation 0 or a plain flush).
    var seekTarget: MediaTime?
    /// The sinks (by node index) that have ended the current generation.
    var finishedSinks: Set<Int> = []
    /// The generation whose end was last announced (``onEndOfStream`` once per generation, even when a
    /// branch joins after the end).
    var announced = -1
    /// The newest ``SeekRequest`` carried out (its sequence; 0: none).
    var lastSeek: UInt64 = 0
  }

  /// The clock every node reads and sets timers on.
  public let clock: any PipelineClock
  /// The executor nodes run on unless ``add(_:on:)`` names another.
  public let executor: any PipelineExecutor
  /// Where nodes run their blocking and heavy jobs (``NodeContext/runOnWorker(_:then:)``).
  public let workers: any WorkerExecutor

  /// Receives every node failure, on the failing node's executor, and decides what happens next.
  /// Without a handler a failure stops the pipeline. Set before ``start()``.
  public var errorHandler: (@Sendable (NodeFailure) -> ErrorDisposition)?
  /// Called with the flush generation once every sink has received that generation's `endOfStream`
  /// (again after each flush that restarts the stream), on the executor of the last sink to finish. Set
  /// before ``start()``.
  public var onEndOfStream: (@Sendable (_ generation: Int) -> Void)?
  /// Called once, after every node's `stop` has run, on the executor of the last partition to stop (inside
  /// ``stop()`` when the pipeline never started). Set before ``start()``.
  public var onStop: (@Sendable () -> Void)?

  /// The nodes, edges, partitions and sinks. Changed by building, then (under `control`'s lock) by
  /// branches joining or leaving: executors never read these lists, a node reaches its own box through
  /// its core.
  var boxes: [any NodeBoxing] = []
  var boxIndex: [ObjectIdentifier: Int] = [:]
  var edges: [any ErasedEdge] = []
  var partitions: [Partition] = []
  var sinks: [any NodeBoxing] = []
  /// The next node's index (a node's name in statistics and DOT; not its place in `boxes`).
  private var nextIndex = 0
  /// The branch being built by ``attach(_:)`` (its lock held), else nil.
  var graft: Graft?
  /// Held while a branch is built and joined: one at a time.
  let grafting = Lock()
  let control = Locked(Control())
  private let stopping = Atomic(false)
  private let stoppedPartitions = Atomic(0)

  /// Creates an empty pipeline whose nodes run on `executor`, read `clock` and hand blocking work to
  /// `workers`.
  ///
  /// - Parameters:
  ///   - executor: runs the nodes (a ``ThreadExecutor``, or a ``ManualExecutor`` in tests).
  ///   - clock: paces timed nodes (a ``VirtualClock`` in tests).
  ///   - workers: by default the process's ``WorkerPool/shared``; when `executor` is a
  ///     ``ManualExecutor``, that executor itself, so that a test drives every job of the graph (worker
  ///     jobs included) on its own thread.
  public init(
    executor: any PipelineExecutor, clock: any PipelineClock = MonotonicClock(), workers: (any WorkerExecutor)? = nil
  ) {
    self.executor = executor
    self.clock = clock
    self.workers = workers ?? (executor as? ManualExecutor) ?? WorkerPool.shared
  }

  var isStopping: Bool { stopping.load(ordering: .relaxed) }

  // MARK: Building

  /// Adds `node` to run on `executor` (the pipeline's by default). `connect(_:to:limits:threadBoundary:)`
  /// adds nodes it has not seen on the default executor, so call this first only to choose another one.
  @inlinable
  @discardableResult
  public func add<N: Node>(_ node: N, on executor: (any PipelineExecutor)? = nil) -> N {
    register(node, executor: executor, drain: Self.drainer(for: N.self))
    return node
  }

  /// Connects `producer`'s output to `consumer`'s input. Compiles only when the types match.
  ///
  /// - Parameters:
  ///   - producer: the node whose output feeds the edge.
  ///   - consumer: the node that takes the edge's items.
  ///   - limits: the edge's bounds (backpressure).
  ///   - threadBoundary: declare this when the two nodes run on different executors; the edge then
  ///     locks and wakes the other side (GStreamer's `queue`).
  @inlinable
  public func connect<Producer: Node, Consumer: Node>(
    _ producer: Producer, to consumer: Consumer, limits: EdgeLimits = .default, threadBoundary: Bool = false
  ) where Producer.Output == Consumer.Input {
    link(
      producer, consumer, limits: limits, threadBoundary: threadBoundary, weigh: nil,
      producerDrain: Self.drainer(for: Producer.self), consumerDrain: Self.drainer(for: Consumer.self))
  }

  /// Connects `producer` to `consumer` on an edge that also bounds bytes and media duration.
  @inlinable
  public func connect<Producer: Node, Consumer: Node>(
    _ producer: Producer, to consumer: Consumer, limits: EdgeLimits = .default, threadBoundary: Bool = false
  ) where Producer.Output == Consumer.Input, Producer.Output: WeighedItem {
    link(
      producer, consumer, limits: limits, threadBoundary: threadBoundary,
      weigh: { ($0.byteCount, $0.duration.microseconds) },
      producerDrain: Self.drainer(for: Producer.self), consumerDrain: Self.drainer(for: Consumer.self))
  }

  /// The per-item loop of a node, built here, in inlinable code, so that it is specialized in the module
  /// that defines the node.
  @inlinable
  static func drainer<N: Node>(for type: N.Type) -> (NodeBox<N>) -> Int {
    { box in box.drainInputs() }
  }

  @usableFromInline
  func register<N: Node>(
    _ node: N, executor: (any PipelineExecutor)?, drain: @escaping (NodeBox<N>) -> Int
  ) {
    _ = box(for: node, executor: executor, drain: drain)
  }

  private func box<N: Node>(
    for node: N, executor: (any PipelineExecutor)? = nil, drain: @escaping (NodeBox<N>) -> Int
  ) -> NodeBox<N> {
    if let index = boxIndex[ObjectIdentifier(node)] { return boxes[index] as! NodeBox<N> }
    if let graft {
      if let box = graft.box(of: ObjectIdentifier(node)) { return box as! NodeBox<N> }
    } else {
      precondition(!control.withLock { $0.started }, "a running pipeline grows only inside attach(_:)")
    }
    let box = NodeBox(node: node, index: nextIndex, executor: executor ?? self.executor, pipeline: self, drain: drain)
    nextIndex += 1
    if let graft {
      graft.add(box, for: ObjectIdentifier(node))
    } else {
      boxIndex[ObjectIdentifier(node)] = boxes.count
      boxes.append(box)
    }
    return box
  }

  @usableFromInline
  func link<Producer: Node, Consumer: Node>(
    _ producer: Producer, _ consumer: Consumer, limits: EdgeLimits, threadBoundary: Bool,
    weigh: ((Producer.Output) -> (bytes: Int, duration: Int64))?,
    producerDrain: @escaping (NodeBox<Producer>) -> Int, consumerDrain: @escaping (NodeBox<Consumer>) -> Int
  ) where Producer.Output == Consumer.Input {
    let from = box(for: producer, drain: producerDrain)
    let to = box(for: consumer, drain: consumerDrain)
    let edge = Edge<Producer.Output>(
      limits: limits, isThreadBoundary: threadBoundary, producer: from.core, consumer: to.core, weigh: weigh)
    if let graft {
      // A branch only adds consumers: a running node's inputs stay as they are.
      guard graft.owns(to) else { return graft.refuse(.intoRunningNode(from: from.core.name, to: to.core.name)) }
      to.inputs.append(edge)
      graft.edges.append(edge)
      // A running producer takes its new output on its executor, when the branch joins.
      if graft.owns(from) { from.context.outputs.append(edge) } else { graft.hooks.append((from, edge)) }
      return
    }
    to.inputs.append(edge)
    from.context.outputs.append(edge)
    edges.append(edge)
  }

  // MARK: Running

  /// Checks the graph and starts it: every node's `start` runs on its executor, then sources produce.
  ///
  /// - Throws: ``GraphError`` when the graph is empty, has a cycle, a node with an unconnected input or
  ///   output, or an edge between executors not declared a thread boundary.
  public func start() throws {
    // A branch attached before the start is plain building: it must not overlap the start's checks.
    try grafting.withLock { try startLocked() }
  }

  private func startLocked() throws {
    try control.withLock { control in
      if control.started { throw GraphError.alreadyStarted }
      // Stopped before it started (its `onStop` has run): nothing runs.
      guard !isStopping else { return }
      let order = try validatedOrder()
      buildPartitions(order)
      control.started = true
      // Queued under the lock, so that a concurrent flush's jobs come after these on every executor. A
      // flush made before the start takes effect right after it.
      let (generation, target) = (control.generation, control.seekTarget)
      for partition in partitions {
        partition.executor.execute { [partition] in
          partition.isActive = true
          // What `start` reports (a failure, a completion) already belongs to the pending generation.
          partition.generation = generation
          for box in partition.boxes { box.core.generation = generation }
          for box in partition.boxes { box.start() }
          if generation > 0 {
            partition.generation = generation
            for box in partition.boxes { box.flush(to: generation, seekingTo: target) }
          }
          partition.run()
        }
      }
    }
  }

  private func validatedOrder() throws -> [any NodeBoxing] {
    if boxes.isEmpty { throw GraphError.empty }
    return try Self.validatedOrder(of: boxes, edges: edges)
  }

  /// `boxes` in topological order, checked: every input and output connected, edges between executors
  /// declared, no cycle. Edges into `boxes` from nodes outside them (a branch's hooks on running nodes)
  /// count as connected and do not order.
  static func validatedOrder(of boxes: [any NodeBoxing], edges: [any ErasedEdge]) throws -> [any NodeBoxing] {
    for box in boxes {
      if box.consumesInput && box.inputEdges.isEmpty { throw GraphError.unconnectedInput(box.core.name) }
      if box.producesOutput && box.outputEdges.isEmpty { throw GraphError.unconnectedOutput(box.core.name) }
    }
    for edge in edges where edge.producer.executor !== edge.consumer.executor && !edge.isThreadBoundary {
      throw GraphError.undeclaredThreadBoundary(from: edge.producer.name, to: edge.consumer.name)
    }
    // Kahn's algorithm; what is left over lies on a cycle. (A node's index names it; its place in
    // `boxes` may differ once nodes were detached.)
    let position = Dictionary(uniqueKeysWithValues: boxes.enumerated().map { ($1.core.index, $0) })
    var indegree = boxes.map { box in box.inputEdges.count { position[$0.producer.index] != nil } }
    var ready = boxes.indices.filter { indegree[$0] == 0 }
    var order: [any NodeBoxing] = []
    while !ready.isEmpty {
      let index = ready.removeFirst()
      order.append(boxes[index])
      for edge in boxes[index].outputEdges {
        guard let next = position[edge.consumer.index] else { continue }
        indegree[next] -= 1
        if indegree[next] == 0 { ready.append(next) }
      }
    }
    if order.count < boxes.count {
      throw GraphError.cycle(boxes.indices.filter { indegree[$0] > 0 }.map { boxes[$0].core.name })
    }
    return order
  }

  private func buildPartitions(_ order: [any NodeBoxing]) {
    for box in order {
      let partition: Partition
      if let existing = partitions.first(where: { $0.executor === box.core.executor }) {
        partition = existing
      } else {
        partition = Partition(executor: box.core.executor, pipeline: self)
        partitions.append(partition)
      }
      partition.boxes.append(box)
      box.core.partition = partition
    }
    sinks = boxes.filter { !$0.producesOutput }
  }

  /// Starts a new flush generation. On each executor, in topological order, queued entries of the old
  /// generation are dropped, every node's `flush` runs (sources reposition there), and sources send
  /// `flush(generation:)` in-band ahead of their new data. Completions and timers made before the flush
  /// are dropped when they arrive. Callable from any thread, before or after ``start()`` (a flush before
  /// the start takes effect at the start); returns the new generation.
  ///
  /// - Parameter target: a seek's target, which nodes read as ``NodeContext/seekTarget`` in their
  ///   `flush`: sources then read from it and presenters show nothing earlier (GStreamer's flushing seek
  ///   and the segment that follows it). Nil restarts the stream where each node started it.
  @discardableResult
  public func flush(seekingTo target: MediaTime? = nil) -> Int {
    control.withLock { control -> Int in
      // A seek request made before this flush and still on its way is older than it: dropped on arrival.
      control.lastSeek = max(control.lastSeek, SeekRequest.latestSequence)
      return startFlush(&control, seekingTo: target)
    }
  }

  /// Starts a flush generation (under the control lock): see ``flush(seekingTo:)``.
  private func startFlush(_ control: inout Control, seekingTo target: MediaTime?) -> Int {
    control.generation += 1
    control.seekTarget = target
    control.finishedSinks = []
    let generation = control.generation
    // Queued under the lock: flushes reach every executor in the order they were made.
    guard control.started else { return generation }
    for partition in partitions {
      partition.executor.execute { [partition] in
        guard partition.isActive else { return }
        partition.generation = generation
        for box in partition.boxes { box.flush(to: generation, seekingTo: target) }
        partition.run()
      }
    }
    return generation
  }

  /// Seeks to `target` as GStreamer's `gst_element_send_event` does on a pipeline: a
  /// ``UpstreamEvent/seek(_:)`` leaves every sink against the flow, and the first source it reaches
  /// flushes the pipeline there (``flush(seekingTo:)``), once. Nodes on the way may handle it themselves.
  /// Sent at once from a sink whose executor may run on this thread (``PipelineExecutor/runHere(_:)``),
  /// else at that executor's next turn; before ``start()`` it is a flush that takes effect at the start.
  /// Callable from any thread.
  public func seek(to target: MediaTime) {
    let request = SeekRequest(to: target)
    guard let sinks = control.withLock({ $0.started ? self.sinks : nil }) else {
      carryOut(request)
      return
    }
    for box in sinks {
      let confined = ExecutorConfined(box)
      let send: @Sendable () -> Void = { confined.value.sendUpstream(.seek(request)) }
      if !box.core.executor.runHere(send) { box.core.executor.execute { send() } }
    }
  }

  /// Flushes to `request`'s target unless it or a newer request was carried out already.
  func carryOut(_ request: SeekRequest) {
    control.withLock { control in
      guard request.sequence > control.lastSeek else { return }
      control.lastSeek = request.sequence
      _ = startFlush(&control, seekingTo: request.target)
    }
  }

  /// Stops the pipeline: every node's `stop` runs on its executor, queues are emptied, and nothing runs
  /// afterwards. Idempotent; callable from any thread, including from a node.
  public func stop() {
    if stopping.exchange(true, ordering: .acquiringAndReleasing) { return }
    // Under the lock: no branch joins once `stopping` is set (see `attach(_:)`), so these are all.
    guard let partitions = control.withLock({ $0.started ? self.partitions : nil }) else {
      onStop?()
      return
    }
    for partition in partitions {
      partition.executor.execute { [self, partition] in
        for box in partition.boxes { box.stop() }
        partition.isActive = false
        if stoppedPartitions.add(1, ordering: .acquiringAndReleasing).newValue == partitions.count {
          onStop?()
        }
      }
    }
  }

  func report(_ failure: NodeFailure) -> ErrorDisposition {
    errorHandler?(failure) ?? .stopPipeline
  }

  func sinkFinished(_ index: Int, on executor: any PipelineExecutor, generation: Int) {
    let all = control.withLock { control -> Bool in
      // A sink of an older generation may end after a flush was made and before it reached the sink.
      guard control.generation == generation else { return false }
      control.finishedSinks.insert(index)
      return announceEnd(&control)
    }
    // Delivered as the executor's next job, so the batch that finished the last sink has completed
    // (and its counters are written) before anyone is told.
    if all, let onEndOfStream { executor.execute { onEndOfStream(generation) } }
  }

  /// True (once per generation) when every sink has ended the current generation; under the control lock.
  func announceEnd(_ control: inout Control) -> Bool {
    guard control.announced != control.generation, !sinks.isEmpty,
      sinks.allSatisfy({ control.finishedSinks.contains($0.core.index) })
    else { return false }
    control.announced = control.generation
    return true
  }

  // MARK: Introspection

  /// The counters of every node and edge.
  ///
  /// - Important: node counters belong to the executors; read them when the pipeline is idle (a test
  ///   between `runUntilIdle()` calls, or after `onEndOfStream`/`onStop` has been delivered).
  public func statistics() -> PipelineStatistics {
    let (boxes, edges) = control.withLock { _ in (self.boxes, self.edges) }
    let edgeStatistics = edges.map { $0.snapshot() }
    var inputHighWater: [Int: Int] = [:]
    for (edge, statistics) in zip(edges, edgeStatistics) {
      inputHighWater[edge.consumer.index] = max(inputHighWater[edge.consumer.index] ?? 0, statistics.highWaterItems)
    }
    let nodes = boxes.map { box -> NodeStatistics in
      var statistics = box.core.statistics
      statistics.inputHighWater = inputHighWater[box.core.index] ?? 0
      return statistics
    }
    return PipelineStatistics(nodes: nodes, edges: edgeStatistics)
  }

  /// The graph in Graphviz DOT: nodes with their types, edges with item types and bounds; thread
  /// boundaries dashed, executors as clusters.
  public func dot() -> String {
    let (boxes, edges) = control.withLock { _ in (self.boxes, self.edges) }
    var lines = ["digraph pipeline {", "  rankdir=LR;", "  node [shape=box, fontname=\"monospace\"];"]
    var executors: [ObjectIdentifier] = []
    for box in boxes where !executors.contains(ObjectIdentifier(box.core.executor)) {
      executors.append(ObjectIdentifier(box.core.executor))
    }
    for (number, executor) in executors.enumerated() {
      let members = boxes.filter { ObjectIdentifier($0.core.executor) == executor }
      if executors.count > 1 {
        lines.append("  subgraph cluster_\(number) {")
        lines.append("    label=\"executor \(number)\";")
      }
      for box in members {
        let label = "\(box.core.name)\\n\(box.core.typeName)"
        lines.append("  n\(box.core.index) [label=\"\(Self.escape(label))\"];")
      }
      if executors.count > 1 { lines.append("  }") }
    }
    for edge in edges {
      let statistics = edge.snapshot()
      var attributes = "label=\"\(Self.escape(statistics.type))\\n\(Self.escape(statistics.limits))\""
      if edge.isThreadBoundary { attributes += ", style=dashed" }
      lines.append("  n\(edge.producer.index) -> n\(edge.consumer.index) [\(attributes)];")
    }
    lines.append("}")
    return lines.joined(separator: "\n") + "\n"
  }

  private static func escape(_ text: String) -> String {
    text.replacingOccurrences(of: "\"", with: "\\\"")
  }
}
