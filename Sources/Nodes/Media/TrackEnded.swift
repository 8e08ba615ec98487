import PipelineGraph

/// In-band word that one input of a node fed by several tracks has ended (a ``TrackSource`` sends it
/// before its end of stream): a node that combines tracks — a compositor — learns which input is over
/// while the others go on (the engine's end of stream comes only once every input has ended).
public struct TrackEnded: EventPayload, Hashable {
  /// The track that ended (as its frames are tagged).
  public let track: TrackID

  /// `track` ended.
  public init(track: TrackID) { self.track = track }

  /// `track ended video:1`.
  public var description: String { "track ended \(track)" }
}
