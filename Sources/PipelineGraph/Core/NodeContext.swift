/// A node's window onto its pipeline: emit items, send events, read the clock, set timers, receive
/// completions from other threads (swift-nio's `ChannelHandlerContext`).
///
/// - Important: a context belongs to one node and is valid only on that node's executor, inside the
///   node's hooks, timers and completion handlers. It is deliberately not `Sendable`.
///
/// Emitting and sending are ignored once the node has finished or the pipeline has stopped; timer and
/// completion bodies run on the node's executor, and are dropped by a flush or stop made before they run.
public final class NodeContext<Output> {
  @usableFromInline let core: NodeCore
  unowned let pipeline: Pipeline
  @exclusivity(unchecked) @usableFromInline var outputs: ContiguousArray<Edge<Output>> = [] {
    didSet { soleOutput = outputs.count == 1 ? Unmanaged.passUnretained(outputs[0]) : nil }
  }
  /// The output edge when there is exactly one (the common case), used without reference counting: the
  /// pipeline owns its edges for as long as nodes run.
  @exclusivity(unchecked) @usableFromInline var soleOutput: Unmanaged<Edge<Output>>?

  init(core: NodeCore, pipeline: Pipeline) {
    self.core = core
    self.pipeline = pipeline
  }

  /// The node's name.
  public var nodeName: String { core.name }

  /// The pipeline's clock.
  public var clock: any PipelineClock { pipeline.clock }

  /// The clock's current time.
  public var now: ClockInstant { pipeline.clock.now }

  /// The current flush generation (0 until the first flush).
  public var generation: Int { core.generation }

  /// Where the current flush generation starts: the target of the seek that started it
  /// (``Pipeline/flush(seekingTo:)``), nil before any flush and after a flush without one. Nodes read
  /// it in `flush(context:)` to reposition.
  public var seekTarget: MediaTime? { core.seekTarget }

  /// Sends `item` to every connected consumer (fan-out shares the item; nothing is copied).
  /// Ignored once the node has finished or the pipeline has stopped.
  @inlinable
  public func emit(_ item: Output) {
    // Inlinable so that it is specialized in the module that defines the node: the item is boxed for
    // its concrete type, without generic metadata look-ups.
    guard core.phase == .running else { return }
    let generation = core.generation
    if let sole = soleOutput {
      sole._withUnsafeGuaranteedRef { edge in
        if edge.push(.item(item), generation: generation) && edge.isThreadBoundary { edge.wakeConsumer() }
      }
    } else {
      for edge in outputs where edge.push(.item(item), generation: generation) && edge.isThreadBoundary {
        edge.wakeConsumer()
      }
    }
    core.statistics.itemsOut &+= 1
  }

  /// Sends an in-band event downstream, in order with the items emitted before and after it.
  /// `endOfStream` cannot be sent this way: the engine sends it when the node finishes.
  public func send(_ event: PipelineEvent) {
    guard core.phase == .running else { return }
    if case .endOfStream = event { return }
    let generation = core.generation
    for edge in outputs where edge.pushEvent(event, generation: generation) && edge.isThreadBoundary {
      edge.wakeConsumer()
    }
  }

  /// Sends an event against the flow, to the producer of each of this node's inputs (a ``UpstreamEvent/seek(_:)``
  /// sent by a source is carried out: the pipeline flushes to its target): at once to one on
  /// this node's executor, at its next turn to one on another (one that has not started yet gets it
  /// right after its start). Ignored once this node has stopped; a producer that has stopped, or that has
  /// already moved to a later flush generation than this node's when the event arrives, drops it.
  public func sendUpstream(_ event: UpstreamEvent) {
    guard core.phase != .stopped else { return }
    guard let inputs = core.box?.inputEdges else { return }
    // A seek that reaches a source (no input to send it on) is carried out: the pipeline flushes.
    if inputs.isEmpty, case .seek(let request) = event {
      pipeline.carryOut(request)
      return
    }
    let executor = core.executor
    let generation = core.generation
    for edge in inputs {
      let producer = edge.producer
      guard let box = producer.box else { continue }
      if producer.executor === executor {
        box.handleUpstream(event)
        continue
      }
      let partition = producer.partition
      let confined = ExecutorConfined(box)
      producer.executor.execute {
        // Said before a seek the producer has already made: about a stretch that is gone. A seek is not:
        // its request's sequence says whether it is older than what was carried out.
        if case .seek = event {
        } else {
          guard producer.generation <= generation else { return }
        }
        confined.value.handleUpstream(event)
        if let partition, partition.isActive { partition.run() }
      }
    }
  }

  /// True when some output edge is full: a node that emits many items per input may check it.
  @inlinable
  public var isOutputFull: Bool {
    if let sole = soleOutput { return sole._withUnsafeGuaranteedRef { $0.isFull } }
    for edge in outputs where edge.isFull { return true }
    return false
  }

  /// Runs `body` on the node's executor once the clock reaches `deadline`. The timer is dropped if the
  /// pipeline flushes or stops before then.
  @discardableResult
  public func scheduleTimer(at deadline: ClockInstant, _ body: @escaping () -> Void) -> ClockTimer {
    let confined = ExecutorConfined(body)
    let deliver = makeDelivery { (_: Void) in confined.value() }
    return pipeline.clock.schedule(at: deadline, on: core.executor) { deliver(()) }
  }

  /// Runs `body` on the node's executor after `delay` of clock time.
  @discardableResult
  public func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> ClockTimer {
    scheduleTimer(at: now + delay, body)
  }

  /// Makes a ``Completion`` that another thread (a network or disk worker) calls to hand a result back;
  /// `body` then runs on the node's executor, unless the pipeline flushed or stopped in between.
  public func makeCompletion<Value: Sendable>(_ body: @escaping (Value) -> Void) -> Completion<Value> {
    let confined = ExecutorConfined(body)
    let deliver = makeDelivery { (value: Value) in confined.value(value) }
    return Completion(deliver: { value in deliver(value) })
  }

  /// Runs `work` on the pipeline's workers (``Pipeline/workers``), then `body` with its result on the
  /// node's executor, unless the pipeline flushed or stopped in between. Blocking calls (file and
  /// network I/O, hashing, finalizing a file) go here, never in a hook.
  public func runOnWorker<Value: Sendable>(
    _ work: @escaping @Sendable () -> Value, then body: @escaping (Value) -> Void
  ) {
    let completion = makeCompletion(body)
    pipeline.workers.execute { completion(work()) }
  }

  private func makeDelivery<Value>(_ body: @escaping @Sendable (Value) -> Void) -> @Sendable (Value) -> Void {
    let core = self.core
    let generation = core.generation
    let executor = core.executor
    // The partition is held by the delivery: a worker may answer after the pipeline is gone (it finds the
    // partition inactive), and `NodeCore.partition` does not keep it alive.
    let partition = core.partition
    return { value in
      let transfer = ExecutorConfined(value)
      executor.execute {
        guard let partition, partition.isActive, partition.generation == generation, core.phase != .stopped
        else { return }
        core.sourceWaiting = false
        body(transfer.value)
        partition.run()
      }
    }
  }

  /// Asks the engine to call a waiting source's `produce` again.
  public func wake() {
    core.sourceWaiting = false
    core.partition?.schedule()
  }

  /// Stops delivering input to the node (it is busy, e.g. waiting for a frame's presentation time);
  /// its input edges fill up and backpressure reaches its producers.
  public func suspendInput() { core.inputSuspended = true }

  /// Resumes delivering input after ``suspendInput()``.
  public func resumeInput() {
    guard core.inputSuspended else { return }
    core.inputSuspended = false
    core.partition?.schedule()
  }

  /// Keeps the node's end of stream back while it still has work in flight (e.g. on worker threads):
  /// when all its inputs have ended, `finish` runs as usual, but `endOfStream` is sent only after
  /// ``releaseEndOfStream()``. Emitting stays possible until then.
  public func holdEndOfStream() { core.holdsEndOfStream = true }

  /// Lets the end of stream go: sent at once if `finish` already ran, else when it runs.
  public func releaseEndOfStream() { core.box?.releaseEndOfStream() }

  /// Reports a failure outside a throwing hook (from a timer or completion): it goes to the pipeline's
  /// error handler exactly as if a hook had thrown it.
  public func fail(_ error: any Error) {
    core.box?.handleFailure(error)
  }
}

@available(*, unavailable)
extension NodeContext: Sendable {}
