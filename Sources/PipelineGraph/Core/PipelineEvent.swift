/// An in-band event: it travels on the same edges as the data, in order with it, like GStreamer's
/// serialized events.
///
/// Nodes see `rangeStart`, `gap`, `formatChange`, `flush` and `custom` in
/// ``Node/handle(_:context:)`` (which forwards by default). `endOfStream` is handled by the engine:
/// a node receives ``Node/finish(context:)`` once every one of its inputs has ended, and the engine then
/// forwards a single `endOfStream` downstream.
public enum PipelineEvent: Sendable, CustomStringConvertible {
  /// A new stretch of data begins, covering `[start, end)` of recording time (e.g. an object was read).
  case rangeStart(MediaRange)
  /// A stretch of the stream is missing; the payload says which and why.
  case gap(any EventPayload)
  /// The format of the data that follows differs from what came before.
  case formatChange(any EventPayload)
  /// The first entry of a new flush generation: everything after it belongs to `generation`.
  case flush(generation: Int)
  /// A producer will send nothing more.
  case endOfStream
  /// An application-defined event.
  case custom(any EventPayload)

  /// A short human-readable form, for logs and tests.
  public var description: String {
    switch self {
    case .rangeStart(let range): "rangeStart(\(range))"
    case .gap(let payload): "gap(\(payload))"
    case .formatChange(let payload): "formatChange(\(payload))"
    case .flush(let generation): "flush(\(generation))"
    case .endOfStream: "endOfStream"
    case .custom(let payload): "custom(\(payload))"
    }
  }
}
