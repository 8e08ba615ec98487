import Foundation
import PipelineGraph

/// Writes TSEG objects (`spec/segment-format.md`): the synthetic generator's and the test harnesses'
/// side of the format.
public enum SegmentWriter {
  /// Encodes `records` as one object covering `range`, encrypted when `key` is given.
  public static func object(
    records: [SegmentRecord], range: MediaRange, key: [UInt8]? = nil, iv: [UInt8]? = nil
  ) throws -> Data {
    var body = ByteWriter()
    for record in records { record.encode(into: &body) }
    var payload = body.data
    var flags: UInt32 = 0
    var usedIV = [UInt8](repeating: 0, count: 16)
    if let key {
      usedIV = iv ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
      payload = try AES128CBC().encrypt(payload, key: key, iv: usedIV)
      flags |= SegmentHeader.encryptedFlag
    }
    let header = SegmentHeader(
      flags: flags, recordCount: UInt32(records.count), startMilliseconds: range.start.milliseconds,
      endMilliseconds: range.end.milliseconds, bodySize: UInt64(payload.count), iv: usedIV)
    return header.encoded + payload
  }
}
