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

  /// Video: how the picture is turned or mirrored to be shown upright, read from ``displayMatrix`` as
  /// ffmpeg's autorotation reads it; nil when shown as stored.
  public var turn: PictureTurn? { PictureTurn(displayMatrix: displayMatrix) }

  /// `h264 1280x720` or `aac 16000 Hz ×1`.
  public var description: String {
    codec.kind == .video ? "\(codec) \(width)x\(height)" : "\(codec) \(sampleRate) Hz ×\(channels)"
  }
}
