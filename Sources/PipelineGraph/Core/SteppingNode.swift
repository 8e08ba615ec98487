/// A node that emits many items per input (a demuxer turns one object into hundreds of packets) and
/// yields when its outputs are full: its hooks only record the work, and the engine calls
/// ``step(context:)`` while the node ``hasPendingWork`` and every output edge has room, before it hands
/// the node its next input or event. Each step emits at most one item (events may accompany it), so an
/// output edge never holds more items than its bound, nor more bytes or duration than its bound plus
/// one item's.
///
/// ``step(context:)`` and ``hasPendingWork`` are used only on the node's executor, between its hooks.
public protocol SteppingNode: Node {
  /// True while work from earlier inputs or events is left.
  var hasPendingWork: Bool { get }

  /// Does the next piece of pending work, emitting at most one item. A step that throws must still
  /// consume the work it failed on.
  func step(context: NodeContext<Output>) throws
}
