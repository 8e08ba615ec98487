import Foundation
import PipelineGraph

/// The 24-byte header of a record and its payload.
public struct SegmentRecord: Hashable, Sendable {
  /// Size of a record's header.
  public static let headerSize = 24
  /// Record flag bit 0: a random-access point.
  public static let keyframeFlag: UInt8 = 1

  /// The record's track.
  public var track: TrackID
  /// The record's codec.
  public var codec: Codec
  /// True for a video random-access point.
  public var isKeyframe: Bool
  /// Audio sample rate (0 for video).
  public var sampleRate: Int
  /// Audio channels (0 for video).
  public var channels: Int
  /// Presentation time (video) or first sample (audio), UTC ms.
  public var timestampMilliseconds: Int64
  /// The payload (a slice of the object's body: no copy).
  public var payload: Data

  /// Creates a record.
  public init(
    track: TrackID, codec: Codec, isKeyframe: Bool = false, sampleRate: Int = 0, channels: Int = 0,
    timestampMilliseconds: Int64, payload: Data
  ) {
    self.track = track
    self.codec = codec
    self.isKeyframe = isKeyframe
    self.sampleRate = sampleRate
    self.channels = channels
    self.timestampMilliseconds = timestampMilliseconds
    self.payload = payload
  }

  /// Appends the record's 24-byte header and payload to `writer`.
  func encode(into writer: inout ByteWriter) {
    writer.append(track.kind.rawValue)
    writer.append(track.channel)
    writer.append(codec.rawValue)
    writer.append(isKeyframe ? Self.keyframeFlag : 0)
    writer.append(UInt32(sampleRate))
    writer.append(UInt8(channels))
    writer.append(contentsOf: [0, 0, 0])
    writer.append(timestampMilliseconds)
    writer.append(UInt32(payload.count))
    writer.append(contentsOf: payload)
  }
}
