import Foundation
import PipelineGraph

/// The 64-byte header of a TSEG object (`spec/segment-format.md`).
public struct SegmentHeader: Hashable, Sendable {
  /// The header's size in bytes.
  public static let size = 64
  /// Flag bit 0: the body is AES-128-CBC encrypted.
  public static let encryptedFlag: UInt32 = 1

  /// Format version (1).
  public var version: UInt16 = 1
  /// Header flags.
  public var flags: UInt32
  /// Records in the (decrypted) body.
  public var recordCount: UInt32
  /// First instant covered, UTC ms, inclusive.
  public var startMilliseconds: Int64
  /// End of coverage, UTC ms, exclusive.
  public var endMilliseconds: Int64
  /// Bytes stored after the header.
  public var bodySize: UInt64
  /// The AES IV (zero when not encrypted).
  public var iv: [UInt8]

  /// True when the body is encrypted.
  public var isEncrypted: Bool { flags & Self.encryptedFlag != 0 }

  /// The covered range.
  public var range: MediaRange {
    MediaRange(startMilliseconds: startMilliseconds, endMilliseconds: endMilliseconds)
  }

  /// Creates a header.
  public init(
    flags: UInt32, recordCount: UInt32, startMilliseconds: Int64, endMilliseconds: Int64, bodySize: UInt64,
    iv: [UInt8] = [UInt8](repeating: 0, count: 16)
  ) {
    self.flags = flags
    self.recordCount = recordCount
    self.startMilliseconds = startMilliseconds
    self.endMilliseconds = endMilliseconds
    self.bodySize = bodySize
    self.iv = iv
  }

  /// The 64 bytes, CRC included.
  public var encoded: Data {
    var bytes = ByteWriter()
    bytes.append(contentsOf: Array("TSEG".utf8))
    bytes.append(version)
    bytes.append(UInt16(Self.size))
    bytes.append(flags)
    bytes.append(recordCount)
    bytes.append(startMilliseconds)
    bytes.append(endMilliseconds)
    bytes.append(bodySize)
    bytes.append(contentsOf: iv)
    let crc = bytes.data.withUnsafeBytes { CRC32.checksum($0) }
    bytes.append(crc)
    bytes.append(UInt32(0))
    return bytes.data
  }
}

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
