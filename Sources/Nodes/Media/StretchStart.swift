import PipelineGraph

/// A kept stretch begins: sent by a ``RangeGate`` (and so a ``Valve``) as a `custom` event just before
/// the group of pictures that leads into it, with the instant the stretch was asked to start at (the
/// group begins at the keyframe at or before it). An ``ExactCut`` downstream cuts each stretch there;
/// other nodes pass it on.
public struct StretchStart: EventPayload, Hashable {
  /// The video track the stretch follows.
  public var track: TrackID
  /// Where the stretch was asked to start.
  public var time: MediaTime

  /// Creates the announcement.
  public init(track: TrackID, time: MediaTime) {
    self.track = track
    self.time = time
  }

  /// `stretch of video:0 from 1000ms`.
  public var description: String { "stretch of \(track) from \(time)" }
}
