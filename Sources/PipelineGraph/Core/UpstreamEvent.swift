/// An event a node sends against the flow, to the producers of its inputs (GStreamer's upstream events).
///
/// Upstream events are not serialized with the data: each reaches its producer at the producer's next
/// turn on its executor (at once when both share one), ahead of anything still queued on the edge
/// between them. A node sees them in ``Node/handleUpstream(_:context:)``, which forwards them further up
/// by default; a source is where they end.
public enum UpstreamEvent: Sendable, CustomStringConvertible {
  /// How much of the stream the sender can use: a sink that falls behind asks for less.
  case qualityOfService(QualityOfService)
  /// An application-defined event.
  case custom(any EventPayload)

  /// A short human-readable form, for logs and tests.
  public var description: String {
    switch self {
    case .qualityOfService(let quality): "qualityOfService(\(quality))"
    case .custom(let payload): "custom(\(payload))"
    }
  }
}
