import PipelineGraph

/// The in-band events of a media graph with their payloads typed: the engine carries payloads as
/// `any EventPayload`, and a media node reads them through this, so that a gap or format change of an
/// unexpected payload type is a failure, never silently ignored.
public enum MediaEvent {
  /// An object (or another stretch of data) of `[start, end)` was read: the demuxer announces each one.
  case objectStart(MediaRange)
  /// A stretch is missing.
  case gap(RecordingGap)
  /// A track's format changes.
  case formatChange(FormatChange)
  /// A new flush generation begins.
  case flush(generation: Int)
  /// An application-defined event.
  case custom(any EventPayload)

  /// Reads `event`.
  ///
  /// - Throws: ``MediaError`` `invalidArgument` when a gap does not carry a ``RecordingGap`` or a format
  ///   change a ``FormatChange`` (nodes of another library were wired into a media graph), and for
  ///   `endOfStream`, which nodes never see.
  public init(_ event: PipelineEvent) throws {
    switch event {
    case .rangeStart(let range): self = .objectStart(range)
    case .gap(let gap as RecordingGap): self = .gap(gap)
    case .formatChange(let change as FormatChange): self = .formatChange(change)
    case .flush(let generation): self = .flush(generation: generation)
    case .custom(let payload): self = .custom(payload)
    case .gap(let payload), .formatChange(let payload):
      throw MediaError(
        .invalidArgument, "a media graph got \(event) carrying a \(type(of: payload)), not a tipipe media payload")
    case .endOfStream:
      throw MediaError(.invalidArgument, "endOfStream is the engine's, not a node's event")
    }
  }
}
