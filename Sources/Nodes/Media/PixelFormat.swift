/// How a decoded picture's pixels are laid out (libavutil's pixel formats, by name).
public enum PixelFormat: Hashable, Sendable, CustomStringConvertible {
  /// Planar Y, U, V; chroma halved in both directions (what H.264/H.265 decoders give).
  case yuv420p
  /// `yuv420p` in full range (JPEG).
  case yuvj420p
  /// Y, then interleaved U and V at half resolution.
  case nv12
  /// One 8-bit luma plane.
  case gray8
  /// Packed 8-bit R, G, B.
  case rgb24
  /// Packed 8-bit B, G, R.
  case bgr24
  /// Packed 8-bit R, G, B, A.
  case rgba
  /// Packed 8-bit B, G, R, A.
  case bgra
  /// Another format, by libavutil's name.
  case other(String)

  /// libavutil's name (`yuv420p`, `nv12`…).
  public var description: String {
    switch self {
    case .yuv420p: "yuv420p"
    case .yuvj420p: "yuvj420p"
    case .nv12: "nv12"
    case .gray8: "gray"
    case .rgb24: "rgb24"
    case .bgr24: "bgr24"
    case .rgba: "rgba"
    case .bgra: "bgra"
    case .other(let name): name
    }
  }

  /// The format of libavutil's `name`.
  init(name: String) {
    self =
      [Self.yuv420p, .yuvj420p, .nv12, .gray8, .rgb24, .bgr24, .rgba, .bgra].first { $0.description == name }
      ?? .other(name)
  }
}
