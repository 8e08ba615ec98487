import PipelineGraph

/// A track's format changed (at a keyframe): the payload of `formatChange` events.
public struct FormatChange: EventPayload, Hashable {
  /// The track.
  public var track: TrackID
  /// The format from this point on.
  public var format: TrackFormat
  /// Where the new format starts.
  public var time: MediaTime

  /// Creates a format change.
  public init(track: TrackID, format: TrackFormat, time: MediaTime) {
    self.track = track
    self.format = format
    self.time = time
  }

  /// `video:0 → h264 1280x720 at 1000ms`.
  public var description: String { "\(track) → \(format) at \(time)" }
}
