/// An item that reports its size and media duration, so edges can bound them.
///
/// Edges always bound the number of items; an edge whose item type conforms to `WeighedItem` also
/// bounds bytes and media duration (see ``EdgeLimits``).
///
/// No states: the edge reads both properties when the item is queued (on the producer's executor) and
/// again when it is taken (on the consumer's), so they must not change once the item is emitted.
public protocol WeighedItem {
  /// Bytes of memory the item holds (payload, not bookkeeping).
  var byteCount: Int { get }
  /// Media duration the item represents (zero when it has none).
  var duration: MediaDuration { get }
}
