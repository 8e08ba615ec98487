import PipelineGraph

/// A stretch of a recording that cannot be used, with the tracks it concerns and why: the payload of
/// the graph's `gap` events and an entry of the export report.
public struct RecordingGap: EventPayload, Hashable {
  /// The stretch.
  public var range: MediaRange
  /// The tracks the gap concerns.
  public var tracks: [TrackID]
  /// Why, in the seed's vocabulary.
  public var reasons: [GapReason]

  /// Creates a gap.
  public init(range: MediaRange, tracks: [TrackID], reasons: [GapReason]) {
    self.range = range
    self.tracks = tracks
    self.reasons = reasons
  }

  /// Whether the gap concerns `track` (a gap that names no track concerns them all).
  public func concerns(_ track: TrackID) -> Bool { tracks.isEmpty || tracks.contains(track) }

  /// `gap [start, end) video:0 noKeyFrame`.
  public var description: String {
    "gap \(range) \(tracks.map(\.description).joined(separator: ",")) \(reasons.map(\.rawValue).joined(separator: ","))"
  }
}
