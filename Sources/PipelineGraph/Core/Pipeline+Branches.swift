/// Branches that join and leave a running pipeline: GStreamer's request pads on a `tee`, linked and
/// released while the pipeline plays.
///
/// A branch hangs on nodes that run (its first edges come out of them) and adds only consumers: nodes
/// that run keep their inputs. It joins at its producers' next turn and takes what they emit from then on
/// (nothing is read again); it starts in the pipeline's current flush generation, and a producer that has
/// already ended that generation hands it the end of stream at once. A branch that leaves is cut from its
/// producers and stopped on its executors; the end of stream is announced once every sink that remains
/// has ended (``Pipeline/onEndOfStream`` at most once a generation).
extension Pipeline {
  /// Adds the nodes `build` connects to the running pipeline: inside `build`, `connect(_:to:limits:threadBoundary:)`
  /// and ``add(_:on:)`` build a branch whose first edges may come out of the pipeline's nodes. The branch
  /// is checked as ``start()`` checks a graph, then joins at once; its nodes' `start` runs on their
  /// executors before their producers' first item reaches them. Before ``start()`` this is plain
  /// building. Callable from any thread, one branch at a time.
  ///
  /// ```swift
  /// try pipeline.attach { pipeline in
  ///   pipeline.connect(demuxer, to: decoder)   // demuxer runs already
  ///   pipeline.connect(decoder, to: window)
  /// }
  /// ```
  ///
  /// - Throws: ``GraphError/intoRunningNode(from:to:)`` when an edge of the branch feeds a node that
  ///   runs, ``GraphError/stopped`` once ``stop()`` was called, and what ``start()`` throws for a
  ///   branch's own shape (an unconnected input or output, a cycle, an undeclared thread boundary); then
  ///   nothing joins. Errors `build` throws pass through, and nothing joins either.
  public func attach(_ build: (Pipeline) throws -> Void) throws {
    try grafting.withLock {
      guard control.withLock({ $0.started }) else { return try build(self) }
      let graft = Graft()
      self.graft = graft
      defer { self.graft = nil }
      try build(self)
      let order = try graft.validatedOrder()
      try join(graft, in: order)
    }
  }

  /// Removes `nodes` from the pipeline: they are cut from the producers that stay (at those producers'
  /// next turn), then stopped on their executors (their `stop` runs once). What they held is dropped.
  /// Callable from any thread; before ``start()`` it undoes building.
  ///
  /// - Throws: ``GraphError/notInPipeline(_:)`` for a node the pipeline does not hold,
  ///   ``GraphError/feedsRemainingNode(from:to:)`` when one of `nodes` feeds a node that stays, and
  ///   ``GraphError/unconnectedOutput(_:)`` when a producer that stays would be left without any output;
  ///   then nothing changes.
  public func detach(_ nodes: [any Node]) throws {
    try grafting.withLock {
      let leaving = try nodes.map { node -> any NodeBoxing in
        guard let index = boxIndex[ObjectIdentifier(node)] else { throw GraphError.notInPipeline(node.name) }
        return boxes[index]
      }
      let leavingIDs = Set(leaving.map { ObjectIdentifier($0) })
      let isLeaving = { (core: NodeCore) in core.box.map { leavingIDs.contains(ObjectIdentifier($0)) } ?? false }
      var cut: [(producer: any NodeBoxing, edge: any ErasedEdge)] = []
      var outputsLeft: [ObjectIdentifier: Int] = [:]
      for edge in edges where !isLeaving(edge.consumer) {
        if isLeaving(edge.producer) {
          throw GraphError.feedsRemainingNode(from: edge.producer.name, to: edge.consumer.name)
        }
        outputsLeft[ObjectIdentifier(edge.producer), default: 0] += 1
      }
      for edge in edges where isLeaving(edge.consumer) && !isLeaving(edge.producer) {
        guard outputsLeft[ObjectIdentifier(edge.producer), default: 0] > 0 else {
          throw GraphError.unconnectedOutput(edge.producer.name)
        }
        if let producer = edge.producer.box { cut.append((producer, edge)) }
      }
      let announce = control.withLock { control -> Int? in
        boxes.removeAll { leavingIDs.contains(ObjectIdentifier($0)) }
        edges.removeAll { isLeaving($0.consumer) }
        sinks.removeAll { leavingIDs.contains(ObjectIdentifier($0)) }
        rebuildIndex()
        guard control.started else {
          for (producer, edge) in cut { producer.leave(edge) }
          return nil
        }
        queueLeaving(leaving, cut: cut)
        // The sinks that remain may all have ended this generation already (nothing is announced once
        // the pipeline stops: `onStop` may have been called).
        guard !isStopping else { return nil }
        return announceEnd(&control) ? control.generation : nil
      }
      if let announce, let onEndOfStream { executor.execute { onEndOfStream(announce) } }
    }
  }

  /// Maps every node to its place in `boxes` again (after nodes left).
  private func rebuildIndex() {
    boxIndex = [:]
    for (index, box) in boxes.enumerated() { boxIndex[box.nodeIdentifier] = index }
  }

  /// Queues the jobs that cut `leaving` from its producers and stop it (under the control lock).
  private func queueLeaving(_ leaving: [any NodeBoxing], cut: [(producer: any NodeBoxing, edge: any ErasedEdge)]) {
    var executors: [any PipelineExecutor] = []
    for core in leaving.map(\.core) + cut.map(\.producer.core)
    where !executors.contains(where: { $0 === core.executor }) {
      executors.append(core.executor)
    }
    for executor in executors {
      // Every job holds every leaving node: an edge still hung on a producer refers to its consumer, which
      // must outlive the job that cuts it.
      let confined = ExecutorConfined((leaving, cut))
      executor.execute {
        let (leaving, cut) = confined.value
        for (producer, edge) in cut where producer.core.executor === executor { producer.leave(edge) }
        for box in leaving where box.core.executor === executor {
          box.stop()
          box.core.partition?.boxes.removeAll { $0 === box }
        }
        // A producer held back by a full edge to the branch may go on.
        for (producer, _) in cut where producer.core.executor === executor {
          if let partition = producer.core.partition, partition.isActive { partition.schedule() }
        }
      }
    }
  }

  /// Adds `graft`'s nodes (in topological `order`) and starts them where they run.
  private func join(_ graft: Graft, in order: [any NodeBoxing]) throws {
    try control.withLock { control in
      guard !isStopping else { throw GraphError.stopped }
      for box in order {
        boxIndex[box.nodeIdentifier] = boxes.count
        boxes.append(box)
        if !box.producesOutput { sinks.append(box) }
      }
      edges += graft.edges
      // Each executor's job starts the nodes that run there, then hangs the branch on the producers that
      // run there: queued under the lock, so flushes and the stop come before or after it on every executor.
      var jobs: [(partition: Partition, fresh: Bool, boxes: [any NodeBoxing], hooks: [Graft.Hook])] = []
      func job(for executor: any PipelineExecutor) -> Int {
        if let index = jobs.firstIndex(where: { $0.partition.executor === executor }) { return index }
        if let partition = partitions.first(where: { $0.executor === executor }) {
          jobs.append((partition, false, [], []))
        } else {
          let partition = Partition(executor: executor, pipeline: self)
          partitions.append(partition)
          jobs.append((partition, true, [], []))
        }
        return jobs.count - 1
      }
      for box in order {
        let index = job(for: box.core.executor)
        box.core.partition = jobs[index].partition
        jobs[index].boxes.append(box)
      }
      for hook in graft.hooks { jobs[job(for: hook.producer.core.executor)].hooks.append(hook) }
      let (generation, target) = (control.generation, control.seekTarget)
      // A sink that has not ended makes the generation's end wait for it (unless it was announced).
      for job in jobs {
        let confined = ExecutorConfined(job)
        job.partition.executor.execute {
          let (partition, fresh, boxes, hooks) = confined.value
          if fresh {
            partition.isActive = true
            partition.generation = generation
          }
          guard partition.isActive else { return }
          for box in boxes {
            partition.boxes.append(box)
            box.core.generation = generation
            box.core.seekTarget = target
            box.start()
          }
          for hook in hooks { hook.producer.join(hook.edge) }
          partition.run()
        }
      }
    }
  }
}

/// A branch being built by ``Pipeline/attach(_:)``: its nodes, its edges, and the edges that hang it on
/// nodes that run. Touched by the attaching thread only (the pipeline's grafting lock held).
final class Graft {
  /// An edge from a running producer into the branch.
  typealias Hook = (producer: any NodeBoxing, edge: any ErasedEdge)

  private(set) var boxes: [any NodeBoxing] = []
  private var index: [ObjectIdentifier: Int] = [:]
  var edges: [any ErasedEdge] = []
  var hooks: [Hook] = []
  private var refusal: GraphError?

  /// The branch's box of the node with `id`, if the branch holds it.
  func box(of id: ObjectIdentifier) -> (any NodeBoxing)? { index[id].map { boxes[$0] } }

  /// Adds a new node's box.
  func add(_ box: any NodeBoxing, for id: ObjectIdentifier) {
    index[id] = boxes.count
    boxes.append(box)
  }

  /// Whether `box` is one of the branch's new nodes.
  func owns(_ box: any NodeBoxing) -> Bool { index[box.nodeIdentifier] != nil }

  /// Notes what makes the branch unfit to join (the first such thing is thrown).
  func refuse(_ error: GraphError) {
    if refusal == nil { refusal = error }
  }

  /// The branch's nodes in topological order, checked as a graph is at the start.
  func validatedOrder() throws -> [any NodeBoxing] {
    if let refusal { throw refusal }
    return try Pipeline.validatedOrder(of: boxes, edges: edges)
  }
}
