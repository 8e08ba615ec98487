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
