/// A processing element of a ``Pipeline``: it takes `Input` items and emits `Output` items.
///
/// Nodes are final classes confined to their pipeline's executor: the engine calls them one at a time,
/// on one thread at a time, so a node needs no locks. A node sees items through ``process(_:context:)``,
/// events through ``handle(_:context:)``, and writes through its ``NodeContext``.
///
/// Every hook has a default, so a node overrides only what it cares about (as swift-nio handlers do).
/// A source has `Input == Never` (adopt ``SourceNode``); a sink has `Output == Never`.
///
/// - Important: hooks are called only on the node's executor, in this order: `start`, then any number
///   of `process`/`handle` (and `flush`, which resets to the state after `start`), then at most one
///   `finish` per generation, and `stop` once at the end.
public protocol Node: AnyObject {
  /// The type of items the node consumes (`Never` for a source).
  associatedtype Input
  /// The type of items the node emits (`Never` for a sink).
  associatedtype Output

  /// The node's name in errors, statistics and `dot()` output.
  var name: String { get }

  /// Called once when the pipeline starts, before any item.
  func start(context: NodeContext<Output>) throws

  /// Consumes one item; emit results with ``NodeContext/emit(_:)``.
  func process(_ input: Input, context: NodeContext<Output>) throws

  /// Consumes one in-band event. The default forwards it downstream.
  func handle(_ event: PipelineEvent, context: NodeContext<Output>) throws

  /// Consumes one event sent upstream by a consumer of this node's output. The default forwards it to
  /// the producers of this node's inputs (a source drops it).
  func handleUpstream(_ event: UpstreamEvent, context: NodeContext<Output>)

  /// Drops all state that depends on data already seen (a seek happened). Queued items are gone already.
  func flush(context: NodeContext<Output>)

  /// All inputs have ended: emit what is still held (e.g. drain a decoder). `endOfStream` follows.
  func finish(context: NodeContext<Output>) throws

  /// The pipeline stops: release resources. Emitting here has no effect.
  func stop(context: NodeContext<Output>)
}

extension Node {
  /// The type's name.
  public var name: String { String(describing: type(of: self)) }
  /// Does nothing.
  public func start(context: NodeContext<Output>) throws {}
  /// Forwards the event downstream.
  public func handle(_ event: PipelineEvent, context: NodeContext<Output>) throws { context.send(event) }
  /// Forwards the event upstream.
  public func handleUpstream(_ event: UpstreamEvent, context: NodeContext<Output>) { context.sendUpstream(event) }
  /// Does nothing.
  public func flush(context: NodeContext<Output>) {}
  /// Does nothing.
  public func finish(context: NodeContext<Output>) throws {}
  /// Does nothing.
  public func stop(context: NodeContext<Output>) {}
}

extension Node where Output == Input {
  /// Passes the item through unchanged.
  public func process(_ input: Input, context: NodeContext<Output>) throws { context.emit(input) }
}
