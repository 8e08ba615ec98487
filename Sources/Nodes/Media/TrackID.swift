/// A track of a recording: its kind and the device's channel id (0…255).
public struct TrackID: Hashable, Sendable, CustomStringConvertible {
  /// Video or audio.
  public var kind: TrackKind
  /// The device's channel id.
  public var channel: UInt8

  /// Creates a track id.
  public init(_ kind: TrackKind, channel: UInt8) {
    self.kind = kind
    self.channel = channel
  }

  /// `video:0`.
  public var description: String { "\(kind):\(channel)" }
}
