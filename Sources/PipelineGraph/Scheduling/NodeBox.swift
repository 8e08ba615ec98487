import Glibc

/// What the engine needs from a node without knowing its types.
protocol NodeBoxing: AnyObject {
  var core: NodeCore { get }
  /// The node's identity (the pipeline's key for it).
  var nodeIdentifier: ObjectIdentifier { get }
  var inputEdges: [any ErasedEdge] { get }
  var outputEdges: [any ErasedEdge] { get }
  var consumesInput: Bool { get }
  var producesOutput: Bool { get }
  func start()
  func runBatch() -> Bool
  func flush(to generation: Int, seekingTo target: MediaTime?)
  func stop()
  func handleFailure(_ error: any Error)
  func releaseEndOfStream()
  func handleUpstream(_ event: UpstreamEvent)
  /// Sends `event` against the flow as the node itself would (a seek leaving a sink), on its executor.
  func sendUpstream(_ event: UpstreamEvent)
  /// Adds an output edge while the node runs (a branch joins), on its executor; an edge that joins after
  /// the node's end of stream gets it at once.
  func join(_ edge: any ErasedEdge)
  /// Removes an output edge while the node runs (a branch leaves), on its executor.
  func leave(_ edge: any ErasedEdge)
}

/// Holds one node with its typed edges and drives its hooks.
///
/// The per-item loop (``drainInputs()``) is inlinable and reached through a closure that the pipeline's
/// inlinable `connect`/`add` build in the node's own module: there it is specialized for the node's
/// concrete types, so `process` is a direct call and the queue holds the items themselves.
@usableFromInline
final class NodeBox<N: Node>: NodeBoxing {
  /// How many entries a node works through before the loop moves on to the next node.
  @usableFromInline static var batchSize: Int { 64 }

  @usableFromInline let node: N
  @usableFromInline let core: NodeCore
  @usableFromInline let context: NodeContext<N.Output>
  @exclusivity(unchecked) @usableFromInline var inputs: ContiguousArray<Edge<N.Input>> = [] {
    didSet { soleInput = inputs.count == 1 ? Unmanaged.passUnretained(inputs[0]) : nil }
  }
  /// The input edge when there is exactly one, used without reference counting (the pipeline owns it).
  @exclusivity(unchecked) @usableFromInline var soleInput: Unmanaged<Edge<N.Input>>?
  @exclusivity(unchecked) @usableFromInline var inputCursor = 0
  @usableFromInline let produce: (() throws -> ProduceResult)?
  /// For a ``SteppingNode``: does one step of its pending work, or returns false when it has none.
  @usableFromInline let step: (() throws -> Bool)?
  private let drain: (NodeBox<N>) -> Int
  /// Upstream events that arrived before `start` (a consumer on another executor started first).
  private var upstreamBeforeStart: [UpstreamEvent] = []

  init(
    node: N, index: Int, executor: any PipelineExecutor, pipeline: Pipeline, drain: @escaping (NodeBox<N>) -> Int
  ) {
    self.node = node
    self.drain = drain
    core = NodeCore(name: node.name, typeName: String(describing: N.self), index: index, executor: executor)
    context = NodeContext(core: core, pipeline: pipeline)
    if let source = node as? any SourceNode {
      produce = Self.producer(for: source, context: context)
    } else {
      produce = nil
    }
    if let stepping = node as? any SteppingNode {
      step = Self.stepper(for: stepping, context: context)
    } else {
      step = nil
    }
    core.box = self
  }

  private static func stepper<S: SteppingNode>(for node: S, context: AnyObject) -> () throws -> Bool {
    let typed = context as! NodeContext<S.Output>
    return {
      guard node.hasPendingWork else { return false }
      try node.step(context: typed)
      return true
    }
  }

  private static func producer<S: SourceNode>(for source: S, context: AnyObject) -> () throws -> ProduceResult {
    // S is N; the cast is checked once here, not per call.
    let typed = context as! NodeContext<S.Output>
    return { try source.produce(context: typed) }
  }

  var nodeIdentifier: ObjectIdentifier { ObjectIdentifier(node) }
  var inputEdges: [any ErasedEdge] { inputs.map { $0 } }
  var outputEdges: [any ErasedEdge] { context.outputs.map { $0 } }
  var consumesInput: Bool { N.Input.self != Never.self }
  var producesOutput: Bool { N.Output.self != Never.self }

  func start() {
    core.phase = .running
    timed { try node.start(context: context) }
    let early = upstreamBeforeStart
    upstreamBeforeStart = []
    for event in early { handleUpstream(event) }
  }

  func runBatch() -> Bool {
    switch core.phase {
    case .running: break
    case .discarding: return discardInput()
    case .idle, .finished, .stopped: return false
    }
    if core.inputSuspended || context.isOutputFull { return false }
    let began = Self.monotonicNanoseconds()
    let done = drain(self)
    core.statistics.busyNanoseconds &+= Self.monotonicNanoseconds() &- began
    return done > 0
  }

  /// A source's turn: `produce` while every output has room, up to a batch (specialized with the
  /// node's loop, so the output checks need no generic metadata look-ups).
  @inlinable
  func runSource(_ produce: () throws -> ProduceResult) -> Int {
    var done = 0
    while done < Self.batchSize, core.phase == .running, !core.sourceWaiting, !context.isOutputFull {
      done += 1
      do {
        switch try produce() {
        case .produced: continue
        case .waiting: core.sourceWaiting = true
        case .finished: finishNode()
        }
      } catch {
        handleFailure(error)
      }
    }
    return done
  }

  /// Works through up to a batch of input entries; returns how many it took.
  ///
  /// A ``SteppingNode``'s pending work comes first, one step per turn while its outputs have room; it
  /// takes its next input only when that work is done, so its outputs never exceed their bounds.
  @inlinable
  func drainInputs() -> Int {
    if let produce { return runSource(produce) }
    var done = 0
    while done < Self.batchSize, core.phase == .running, !core.inputSuspended, !context.isOutputFull {
      if let step {
        let stepped: Bool
        do { stepped = try step() } catch {
          handleFailure(error)
          stepped = true
        }
        if stepped {
          done &+= 1
          continue
        }
        if core.endsAfterSteps {
          endAfterFinish()
          break
        }
      }
      guard let entry = nextEntry() else { break }
      done &+= 1
      switch entry {
      case .item(let item):
        core.statistics.itemsIn &+= 1
        do { try node.process(item, context: context) } catch { handleFailure(error) }
      case .event(let box):
        if case .endOfStream = box.event {
          inputEnded()
        } else {
          core.statistics.eventsIn &+= 1
          do { try node.handle(box.event, context: context) } catch { handleFailure(error) }
        }
      }
    }
    return done
  }

  /// The next entry from the inputs, taken round-robin so that no fan-in input starves another.
  @inlinable
  func nextEntry() -> EdgeEntry<N.Input>? {
    if let sole = soleInput {
      let generation = core.generation
      return sole._withUnsafeGuaranteedRef { edge in
        var wasFull = false
        let entry = edge.pop(currentGeneration: generation, wasFull: &wasFull)
        if wasFull && edge.isThreadBoundary { edge.wakeProducer() }
        return entry
      }
    }
    let count = inputs.count
    let generation = core.generation
    var offset = 0
    while offset < count {
      var position = inputCursor &+ offset
      if position >= count { position &-= count }
      let edge = inputs[position]
      var wasFull = false
      if let entry = edge.pop(currentGeneration: generation, wasFull: &wasFull) {
        inputCursor = position &+ 1 == count ? 0 : position &+ 1
        if wasFull && edge.isThreadBoundary { edge.wakeProducer() }
        return entry
      }
      offset &+= 1
    }
    return nil
  }

  @usableFromInline
  func inputEnded() {
    core.endedInputs += 1
    if core.endedInputs == inputs.count { finishNode() }
  }

  private func discardInput() -> Bool {
    var any = false
    while nextEntry() != nil { any = true }
    return any
  }

  @usableFromInline
  func finishNode() {
    timed { try node.finish(context: context) }
    guard core.phase == .running else { return }
    if step != nil {
      // What `finish` left as pending work leaves first, step by step.
      core.endsAfterSteps = true
      return
    }
    endAfterFinish()
  }

  /// Sends the end of stream after `finish` (unless the node holds it back).
  @usableFromInline
  func endAfterFinish() {
    core.endsAfterSteps = false
    guard core.phase == .running else { return }
    if core.holdsEndOfStream {
      core.finishPending = true
      return
    }
    core.phase = .finished
    sendEndOfStream()
  }

  func releaseEndOfStream() {
    core.holdsEndOfStream = false
    guard core.finishPending, core.phase == .running else { return }
    core.finishPending = false
    core.phase = .finished
    sendEndOfStream()
  }

  private func sendEndOfStream() {
    let generation = core.generation
    for edge in context.outputs where edge.pushEvent(.endOfStream, generation: generation) {
      if edge.isThreadBoundary { edge.wakeConsumer() }
    }
    if !producesOutput { context.pipeline.sinkFinished(core.index, on: core.executor, generation: generation) }
  }

  func flush(to generation: Int, seekingTo target: MediaTime?) {
    core.generation = generation
    core.seekTarget = target
    for edge in inputs { edge.removeEntries(olderThan: generation) }
    core.endedInputs = 0
    core.inputSuspended = false
    core.sourceWaiting = false
    core.holdsEndOfStream = false
    core.finishPending = false
    core.endsAfterSteps = false
    core.phase = .running
    node.flush(context: context)
    if produce != nil { context.send(.flush(generation: generation)) }
  }

  func sendUpstream(_ event: UpstreamEvent) { context.sendUpstream(event) }

  func join(_ edge: any ErasedEdge) {
    let edge = edge as! Edge<N.Output>
    context.outputs.append(edge)
    // A producer that already ended (or ended its branch) this generation sends nothing more: its new
    // consumer hears the end at once, as the others did.
    guard core.phase == .finished || core.phase == .discarding else { return }
    if edge.pushEvent(.endOfStream, generation: core.generation) && edge.isThreadBoundary { edge.wakeConsumer() }
  }

  func leave(_ edge: any ErasedEdge) {
    context.outputs.removeAll { $0 === edge }
  }

  /// An upstream event reaches the node unless it has stopped (a finished node may still be asked: its
  /// producers may still be running); one that comes before the node started waits for its start.
  func handleUpstream(_ event: UpstreamEvent) {
    switch core.phase {
    case .stopped: return
    case .idle: upstreamBeforeStart.append(event)
    case .running, .finished, .discarding: node.handleUpstream(event, context: context)
    }
  }

  func stop() {
    guard core.phase != .stopped else { return }
    node.stop(context: context)
    core.phase = .stopped
    for edge in inputs { edge.removeEntries(olderThan: Int.max) }
  }

  @usableFromInline
  func handleFailure(_ error: any Error) {
    let failure = NodeFailure(
      node: ObjectIdentifier(node), nodeName: core.name, error: error, generation: core.generation)
    switch context.pipeline.report(failure) {
    case .resume:
      break
    case .endBranch:
      guard core.phase == .running else { return }
      core.phase = .discarding
      sendEndOfStream()
    case .stopPipeline:
      context.pipeline.stop()
    }
  }

  private func timed(_ body: () throws -> Void) {
    let began = Self.monotonicNanoseconds()
    do { try body() } catch { handleFailure(error) }
    core.statistics.busyNanoseconds &+= Self.monotonicNanoseconds() &- began
  }

  static func monotonicNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
  }
}
