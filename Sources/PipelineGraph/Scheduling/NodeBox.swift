import Glibc

/// What the engine needs from a node without knowing its types.
protocol NodeBoxing: AnyObject {
  var core: NodeCore { get }
  var inputs: ContiguousArray<Edge> { get }
  var outputEdges: ContiguousArray<Edge> { get }
  var consumesInput: Bool { get }
  var producesOutput: Bool { get }
  func start()
  func runBatch() -> Bool
  func flush(to generation: Int)
  func stop()
  func handleFailure(_ error: any Error)
}

/// Holds one node with its typed edges and drives its hooks.
final class NodeBox<N: Node>: NodeBoxing {
  /// How many entries a node works through before the loop moves on to the next node.
  static var batchSize: Int { 64 }

  let node: N
  let core: NodeCore
  let context: NodeContext<N.Output>
  var inputs: ContiguousArray<Edge> = []
  private var inputCursor = 0
  private let produce: (() throws -> ProduceResult)?

  init(node: N, index: Int, executor: any PipelineExecutor, pipeline: Pipeline) {
    self.node = node
    core = NodeCore(name: node.name, typeName: String(describing: N.self), index: index, executor: executor)
    context = NodeContext(core: core, pipeline: pipeline)
    if let source = node as? any SourceNode {
      produce = Self.producer(for: source, context: context)
    } else {
      produce = nil
    }
  }

  private static func producer<S: SourceNode>(for source: S, context: AnyObject) -> () throws -> ProduceResult {
    // S is N; the cast is checked once here, not per call.
    let typed = context as! NodeContext<S.Output>
    return { try source.produce(context: typed) }
  }

  var outputEdges: ContiguousArray<Edge> { context.outputs }
  var consumesInput: Bool { N.Input.self != Never.self }
  var producesOutput: Bool { N.Output.self != Never.self }

  func start() {
    core.phase = .running
    timed { try node.start(context: context) }
  }

  func runBatch() -> Bool {
    switch core.phase {
    case .running: break
    case .discarding: return discardInput()
    case .idle, .finished, .stopped: return false
    }
    if core.inputSuspended || context.isOutputFull { return false }
    let began = Self.monotonicNanoseconds()
    var done = 0
    if let produce {
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
    } else {
      var itemsIn = 0
      var eventsIn = 0
      while done < Self.batchSize, core.phase == .running, !core.inputSuspended, !context.isOutputFull,
        let entry = nextEntry()
      {
        done += 1
        do {
          switch entry {
          case .item(let item):
            itemsIn += 1
            // The edge was created for exactly this type by `connect`.
            try node.process(item as! N.Input, context: context)
          case .event(.endOfStream):
            core.endedInputs += 1
            if core.endedInputs == inputs.count { finishNode() }
          case .event(let event):
            eventsIn += 1
            try node.handle(event, context: context)
          }
        } catch {
          handleFailure(error)
        }
      }
      core.statistics.itemsIn &+= itemsIn
      core.statistics.eventsIn &+= eventsIn
    }
    core.statistics.busyNanoseconds &+= Self.monotonicNanoseconds() &- began
    return done > 0
  }

  /// The next entry from the inputs, taken round-robin so that no fan-in input starves another.
  private func nextEntry() -> EdgeEntry? {
    let count = inputs.count
    let generation = core.generation
    for offset in 0..<count {
      let position = (inputCursor + offset) % count
      let edge = inputs[position]
      var wasFull = false
      if let entry = edge.pop(currentGeneration: generation, wasFull: &wasFull) {
        inputCursor = (position + 1) % count
        if wasFull && edge.isThreadBoundary { edge.producer.partition?.schedule() }
        return entry
      }
    }
    return nil
  }

  private func discardInput() -> Bool {
    var any = false
    while let _ = nextEntry() { any = true }
    return any
  }

  private func finishNode() {
    timed { try node.finish(context: context) }
    guard core.phase == .running else { return }
    core.phase = .finished
    sendEndOfStream()
  }

  private func sendEndOfStream() {
    let generation = core.generation
    for edge in context.outputs where edge.push(.event(.endOfStream), generation: generation) {
      if edge.isThreadBoundary { edge.consumer.partition?.schedule() }
    }
    if context.outputs.isEmpty { context.pipeline.sinkFinished(on: core.executor) }
  }

  func flush(to generation: Int) {
    core.generation = generation
    for edge in inputs { edge.removeEntries(olderThan: generation) }
    core.endedInputs = 0
    core.inputSuspended = false
    core.sourceWaiting = false
    core.phase = .running
    node.flush(context: context)
    if produce != nil { context.send(.flush(generation: generation)) }
  }

  func stop() {
    guard core.phase != .stopped else { return }
    node.stop(context: context)
    core.phase = .stopped
    for edge in inputs { edge.removeEntries(olderThan: Int.max) }
  }

  func handleFailure(_ error: any Error) {
    let tiError = error as? TiError ?? TiError(.ioFailed, String(describing: error))
    let failure = NodeFailure(nodeName: core.name, nodeIndex: core.index, error: tiError)
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

  @inline(__always)
  static func monotonicNanoseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
  }
}
