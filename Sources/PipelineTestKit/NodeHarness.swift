import PipelineGraph

/// Runs one node between a scripted input and a recording output, on a `ManualExecutor` and a
/// `VirtualClock` (GStreamer's `GstHarness`, swift-nio's `EmbeddedChannel`).
///
/// ```swift
/// let harness = try NodeHarness(Doubler())
/// harness.push(21)
/// harness.runUntilIdle()
/// #expect(harness.outputItems == [42])
/// #expect(harness.finish() == .clean)
/// ```
///
/// States: started (by `init`) → finished: after ``finish()`` the pipeline has stopped, and entries
/// pushed later are never delivered.
///
/// - Important: single-threaded: use it from the test's thread only.
public final class NodeHarness<Subject: Node> {
  /// The node under test.
  public let node: Subject
  /// The executor everything runs on.
  public let executor = ManualExecutor()
  /// The clock the node reads; advance it to fire the node's timers.
  public let clock: VirtualClock
  /// The pipeline `source → node → sink` the harness built.
  public let pipeline: Pipeline
  private let source: ScriptedSource<Subject.Input>
  private let sink: CollectingSink<Subject.Output>
  private let failureLog = FailureLog()

  /// What was left when the harness finished.
  public enum FinishResult: Equatable {
    /// Every input was consumed and the node emitted nothing that was not read.
    case clean
    /// Entries the node emitted that the test never read.
    case leftOvers(count: Int)
  }

  /// Builds and starts the harness around `node`.
  ///
  /// - Parameters:
  ///   - node: the node under test.
  ///   - clock: the clock the pipeline runs on (advance it to fire the node's timers).
  ///   - outputLimits: the bound of the edge after the node (to observe backpressure).
  ///   - errorDisposition: what the pipeline does with the node's failures (they are recorded either way).
  public init(
    _ node: Subject, clock: VirtualClock = VirtualClock(), outputLimits: EdgeLimits = EdgeLimits(items: 1 << 20),
    errorDisposition: ErrorDisposition = .resume
  ) throws {
    self.node = node
    self.clock = clock
    pipeline = Pipeline(executor: executor, clock: clock)
    source = ScriptedSource(name: "harness.input", endsAfterScript: false)
    sink = CollectingSink(name: "harness.output")
    pipeline.connect(source, to: node, limits: EdgeLimits(items: 1 << 20))
    pipeline.connect(node, to: sink, limits: outputLimits)
    let log = failureLog
    pipeline.errorHandler = { failure in
      log.append(failure)
      return errorDisposition
    }
    try pipeline.start()
    executor.runUntilIdle()
  }

  /// Queues an item for the node (delivered at the next ``runUntilIdle()``).
  public func push(_ item: Subject.Input) { source.append([.item(item)]) }

  /// Queues several items.
  public func push(contentsOf items: [Subject.Input]) { source.append(items.map { .item($0) }) }

  /// Queues an in-band event for the node.
  public func push(event: PipelineEvent) { source.append([.event(event)]) }

  /// Ends the input: the node finishes once it has consumed everything queued.
  public func endInput() { source.endInput() }

  /// Runs the executor until nothing more can happen without the clock moving.
  @discardableResult
  public func runUntilIdle() -> Int { executor.runUntilIdle() }

  /// Advances the clock, firing the node's timers in deadline order.
  public func advance(by duration: Duration) {
    clock.advance(by: duration)
    executor.runUntilIdle()
  }

  /// Seeks: flushes the pipeline and runs until idle.
  public func flush() {
    pipeline.flush()
    executor.runUntilIdle()
  }

  private var readPosition = 0

  /// Everything the node emitted so far (items and events), including entries already read.
  public var output: [Recorded<Subject.Output>] { sink.received }

  /// The items the node emitted so far.
  public var outputItems: [Subject.Output] { sink.items }

  /// The events the node sent so far.
  public var outputEvents: [PipelineEvent] { sink.events }

  /// Returns the entries emitted since the last read, and marks them read.
  public func readOutput() -> [Recorded<Subject.Output>] {
    defer { readPosition = sink.received.count }
    return Array(sink.received[readPosition...])
  }

  /// The events the node sent upstream so far (and those it forwarded), in order.
  public var upstreamEvents: [UpstreamEvent] { source.upstreamEvents }

  /// Sends an event upstream to the node, as its consumer would, and runs until idle.
  public func sendUpstream(_ event: UpstreamEvent) {
    sink.sendUpstream(event)
    executor.runUntilIdle()
  }

  /// The failures the node reported, in order.
  public var reportedFailures: [NodeFailure] { failureLog.all }

  /// True once `endOfStream` reached the output.
  public var didFinish: Bool { sink.finishCount > 0 }

  /// Ends the input, runs to the end, stops the pipeline, and tells whether anything emitted was unread.
  public func finish() -> FinishResult {
    endInput()
    executor.runUntilIdle()
    pipeline.stop()
    executor.runUntilIdle()
    let unread = sink.received.count - readPosition
    let onlyEndOfStream = unread == 1 && sink.received.last?.event.map { "\($0)" } == "endOfStream"
    return unread == 0 || onlyEndOfStream ? .clean : .leftOvers(count: unread)
  }
}

/// Failures collected from the error handler (which may run on any executor).
final class FailureLog: Sendable {
  private let storage = LockedArray<NodeFailure>()
  func append(_ failure: NodeFailure) { storage.append(failure) }
  var all: [NodeFailure] { storage.values }
}
