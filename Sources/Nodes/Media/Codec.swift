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

extension Codec {
  /// The extension of a raw elementary-stream file of the codec.
  public var fileExtension: String {
    switch self {
    case .h264: "h264"
    case .h265: "h265"
    case .aac: "aac"
    case .g711a: "alaw"
    case .g711u: "ulaw"
    }
  }
}
