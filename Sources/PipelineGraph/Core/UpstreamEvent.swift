import Synchronization

/// An event a node sends against the flow, to the producers of its inputs (GStreamer's upstream events).
///
/// Upstream events are not serialized with the data: each reaches its producer at the producer's next
/// turn on its executor (at once when both share one), ahead of anything still queued on the edge
/// between them. A node sees them in ``Node/handleUpstream(_:context:)``, which forwards them further up
/// by default; a source is where they end.
public enum UpstreamEvent: Sendable, CustomStringConvertible {
  /// How much of the stream the sender can use: a sink that falls behind asks for less.
  case qualityOfService(QualityOfService)
  /// A flushing seek asked from inside the graph (GStreamer's seek event): it travels to the sources,
  /// and the first source it reaches flushes the pipeline to its target (``Pipeline/flush(seekingTo:)``):
  /// once per request, however many paths lead there. A node that handles seeks itself does not forward
  /// it. ``Pipeline/seek(to:)`` sends one from every sink.
  case seek(SeekRequest)
  /// An application-defined event.
  case custom(any EventPayload)

  /// A short human-readable form, for logs and tests.
  public var description: String {
    switch self {
    case .qualityOfService(let quality): "qualityOfService(\(quality))"
    case .seek(let request): "seek(\(request.target))"
    case .custom(let payload): "custom(\(payload))"
    }
  }
}

/// A seek's target, and what tells one request from another: a request that reaches the sources along
/// several paths (every sink sends it) flushes the pipeline once, and an older request that arrives after
/// a newer one took effect is dropped (the latest seek wins).
public struct SeekRequest: Sendable, Hashable {
  /// Where the stream restarts: nodes read it as ``NodeContext/seekTarget`` in their `flush`.
  public let target: MediaTime
  /// Increasing over the process: later requests have larger numbers.
  public let sequence: UInt64

  private static let counter = Atomic<UInt64>(0)

  /// The sequence of the newest request made so far (a flush made now is newer than all of them).
  static var latestSequence: UInt64 { counter.load(ordering: .relaxed) }

  /// A new request for `target`.
  public init(to target: MediaTime) {
    self.target = target
    sequence = Self.counter.add(1, ordering: .relaxed).newValue
  }
}
