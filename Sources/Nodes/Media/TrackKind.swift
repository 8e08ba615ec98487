/// The kind of a track.
public enum TrackKind: UInt8, Sendable, Hashable, Codable, CustomStringConvertible {
  /// Pictures.
  case video = 1
  /// Sound.
  case audio = 2

  /// `video` or `audio`.
  public var description: String { self == .video ? "video" : "audio" }
}
