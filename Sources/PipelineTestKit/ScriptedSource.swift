import PipelineGraph

/// A source that emits the entries it is given, in order, one per `produce` call.
///
/// Entries can be appended while the pipeline runs (``append(_:)``); once ``endInput()`` was called and the
/// script is exhausted the source finishes. Until then it waits for more.
///
/// - Important: use it on the thread that drives a `ManualExecutor` (the test's).
public final class ScriptedSource<Item>: SourceNode {
  /// The source emits `Item`s.
  public typealias Output = Item

  /// The node's name.
  public let name: String
  private var script: [Recorded<Item>]
  private var position = 0
  private var ended: Bool
  private var context: NodeContext<Item>?
  /// How many times `produce` was called (demand the source saw).
  public private(set) var produceCalls = 0
  /// How many times the engine flushed the source.
  public private(set) var flushCount = 0
  /// The seek target of each flush (nil for a flush without one), in order.
  public private(set) var flushTargets: [MediaTime?] = []
  /// The events its consumers sent upstream, in the order they arrived.
  public private(set) var upstreamEvents: [UpstreamEvent] = []

  /// Creates a source with an initial script; `endsAfterScript` finishes it once the script is spent.
  public init(name: String = "ScriptedSource", _ script: [Recorded<Item>] = [], endsAfterScript: Bool = true) {
    self.name = name
    self.script = script
    self.ended = endsAfterScript
  }

  /// Creates a source that emits `items` and then finishes.
  public convenience init(name: String = "ScriptedSource", items: [Item]) {
    self.init(name: name, items.map { .item($0) })
  }

  /// Appends entries to the script and wakes the source.
  public func append(_ entries: [Recorded<Item>]) {
    script.append(contentsOf: entries)
    context?.wake()
  }

  /// Says the script is complete: the source finishes once it has emitted everything.
  public func endInput() {
    ended = true
    context?.wake()
  }

  /// Remembers the context so appended entries can wake the source.
  public func start(context: NodeContext<Item>) throws { self.context = context }

  /// Emits the next scripted entry.
  public func produce(context: NodeContext<Item>) throws -> ProduceResult {
    produceCalls += 1
    guard position < script.count else { return ended ? .finished : .waiting }
    defer { position += 1 }
    switch script[position] {
    case .item(let item): context.emit(item)
    case .event(let event): context.send(event)
    }
    return .produced
  }

  /// Records the event (a source is where upstream events end).
  public func handleUpstream(_ event: UpstreamEvent, context: NodeContext<Item>) {
    upstreamEvents.append(event)
    // Where events end: a seek is carried out (the pipeline flushes), anything else goes no further.
    context.sendUpstream(event)
  }

  /// Counts flushes; the script position is kept (a test appends what follows the seek).
  public func flush(context: NodeContext<Item>) {
    flushCount += 1
    flushTargets.append(context.seekTarget)
  }
}
