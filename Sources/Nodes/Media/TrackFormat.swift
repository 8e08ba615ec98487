import Foundation

/// The codec parameters of a track: what a decoder or muxer must know before the first packet.
public struct TrackFormat: Hashable, Sendable, CustomStringConvertible {
  /// The codec.
  public var codec: Codec
  /// Video: coded width in pixels (0 when not yet known).
  public var width: Int
  /// Video: coded height in pixels (0 when not yet known).
  public var height: Int
  /// Audio: samples per second.
  public var sampleRate: Int
  /// Audio: 1 or 2.
  public var channels: Int
  /// Video: the parameter sets (VPS/SPS/PPS NAL units in Annex B, start codes included), as carried by
  /// the keyframe that started the track; empty for audio.
  public var parameterSets: Data
  /// AAC: the AudioSpecificConfig derived from the ADTS header; empty otherwise.
  public var audioSpecificConfig: Data
  /// Video: how a player turns (or mirrors) the picture to show it — the nine values of an MP4 track
  /// header's matrix (libavformat's display matrix, a phone's rotated recording); empty for none.
  public var displayMatrix: [Int32]

  /// Creates a format.
  public init(
    codec: Codec, width: Int = 0, height: Int = 0, sampleRate: Int = 0, channels: Int = 0,
    parameterSets: Data = Data(), audioSpecificConfig: Data = Data(), displayMatrix: [Int32] = []
  ) {
    self.codec = codec
    self.width = width
    self.height = height
    self.sampleRate = sampleRate
    self.channels = channels
    self.parameterSets = parameterSets
    self.audioSpecificConfig = audioSpecificConfig
    self.displayMatrix = displayMatrix
  }

  /// Video: the clockwise turn, in degrees (0, 90, 180 or 270), that shows the picture upright, read
  /// from ``displayMatrix`` as ffmpeg's autorotation reads it (a mirror in the matrix is ignored, as
  /// ffmpeg 5 does); 0 without a matrix or for a turn that is not a quarter turn.
  public var rotation: Int {
    guard displayMatrix.count == 9 else { return 0 }
    // 16.16 fixed point: the matrix's first two columns give the turn (libavutil's
    // av_display_rotation_get, whose sign ffmpeg flips to get the clockwise turn).
    let (a, b) = (Double(displayMatrix[0]) / 65536, Double(displayMatrix[1]) / 65536)
    let (c, d) = (Double(displayMatrix[3]) / 65536, Double(displayMatrix[4]) / 65536)
    let (scaleX, scaleY) = ((a * a + c * c).squareRoot(), (b * b + d * d).squareRoot())
    guard scaleX > 0, scaleY > 0 else { return 0 }
    var degrees = atan2(b / scaleY, a / scaleX) * 180 / .pi
    if degrees < 0 { degrees += 360 }
    let quarter = (degrees / 90).rounded()
    guard abs(degrees - quarter * 90) < 1 else { return 0 }
    return Int(quarter) % 4 * 90
  }

  /// `h264 1280x720` or `aac 16000 Hz ×1`.
  public var description: String {
    codec.kind == .video ? "\(codec) \(width)x\(height)" : "\(codec) \(sampleRate) Hz ×\(channels)"
  }
}
