/// The kind of a track.
public enum TrackKind: UInt8, Sendable, Hashable, Codable, CustomStringConvertible {
  /// Pictures.
  case video = 1
  /// Sound.
  case audio = 2

  /// `video` or `audio`.
  public var description: String { self == .video ? "video" : "audio" }
}

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

/// A codec of the segment format.
public enum Codec: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// H.264 in Annex B.
  case h264 = 1
  /// H.265 in Annex B.
  case h265 = 2
  /// AAC-LC in ADTS.
  case aac = 16
  /// G.711 A-law.
  case g711a = 17
  /// G.711 µ-law.
  case g711u = 18

  /// The track kind the codec belongs to.
  public var kind: TrackKind { rawValue < 16 ? .video : .audio }

  /// The index's name: `h264`, `h265`, `aac`, `g711a`, `g711u`.
  public var description: String {
    switch self {
    case .h264: "h264"
    case .h265: "h265"
    case .aac: "aac"
    case .g711a: "g711a"
    case .g711u: "g711u"
    }
  }

  /// The codec with the index name `name`.
  public init?(name: String) {
    guard let codec = Codec.allCases.first(where: { $0.description == name }) else { return nil }
    self = codec
  }
}
