import Foundation
import PipelineGraph

/// Parses TSEG objects, rejecting every invalid one with the spec's reason (`spec/segment-format.md`,
/// "Errors a reader distinguishes"): checks run in the spec's order, sizes are checked before anything
/// is allocated, and no input can make it crash or loop.
public enum SegmentReader {
  /// Parses and checks the 64-byte header of `object` (the whole object, to check its total size).
  public static func header(of object: Data) throws -> SegmentHeader {
    guard object.count >= SegmentHeader.size else {
      throw unreadable("object of \(object.count) bytes is shorter than its 64-byte header")
    }
    return try object.withUnsafeBytes { raw -> SegmentHeader in
      let reader = ByteReader(bytes: raw)
      guard raw[0] == 0x54, raw[1] == 0x53, raw[2] == 0x45, raw[3] == 0x47 else { throw unreadable("bad magic") }
      let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<56]))
      guard crc == reader.integer(at: 56, as: UInt32.self) else { throw unreadable("header CRC mismatch") }
      let version: UInt16 = reader.integer(at: 4)
      guard version == 1 else { throw MediaError.gap(.unsupportedMedia, "TSEG version \(version) is not supported") }
      let flags: UInt32 = reader.integer(at: 8)
      guard flags & ~SegmentHeader.encryptedFlag == 0 else {
        throw MediaError.gap(.unsupportedMedia, "unknown header flags 0x\(String(flags, radix: 16))")
      }
      let headerSize: UInt16 = reader.integer(at: 6)
      guard headerSize == 64 else { throw unreadable("header_size \(headerSize), expected 64") }
      let start: Int64 = reader.integer(at: 16)
      let end: Int64 = reader.integer(at: 24)
      guard end > start else { throw unreadable("end_ms \(end) is not after start_ms \(start)") }
      guard MediaTime.validMilliseconds.contains(start), MediaTime.validMilliseconds.contains(end) else {
        throw unreadable("start_ms \(start) or end_ms \(end) is outside the representable times")
      }
      let bodySize: UInt64 = reader.integer(at: 32)
      guard bodySize == UInt64(object.count - SegmentHeader.size) else {
        throw unreadable("body_size \(bodySize) but \(object.count - SegmentHeader.size) bytes follow the header")
      }
      if flags & SegmentHeader.encryptedFlag != 0, bodySize == 0 || bodySize % 16 != 0 {
        throw unreadable("encrypted body of \(bodySize) bytes is not a whole number of AES blocks")
      }
      return SegmentHeader(
        flags: flags, recordCount: reader.integer(at: 12), startMilliseconds: start, endMilliseconds: end,
        bodySize: bodySize, iv: Array(raw[40..<56]))
    }
  }

  /// Parses a plaintext body against its header. Payloads are slices of `body` (no copies).
  ///
  /// In an encrypted object, a failure before the first record has been read whole is
  /// `decryptionFailed` whatever the check (`spec/segment-format.md`): a wrong key passes the PKCS#7
  /// check about once in 256 objects and leaves random bytes, which fail some record check.
  public static func records(in body: Data, header: SegmentHeader) throws -> [SegmentRecord] {
    var records: [SegmentRecord] = []
    do {
      try parseRecords(in: body, header: header, into: &records)
    } catch let error as MediaError where header.isEncrypted && records.isEmpty {
      throw MediaError.gap(
        .decryptionFailed, "the first record is invalid after decryption (wrong key?): \(error.message)")
    }
    return records
  }

  private static func parseRecords(in body: Data, header: SegmentHeader, into records: inout [SegmentRecord]) throws {
    // A record takes at least 24 bytes: a count the body cannot hold is rejected before reserving.
    guard UInt64(header.recordCount) * UInt64(SegmentRecord.headerSize) <= UInt64(body.count) else {
      throw unreadable("record_count \(header.recordCount) cannot fit in \(body.count) bytes")
    }
    records.reserveCapacity(Int(header.recordCount))
    var lastTime: [TrackID: Int64] = [:]
    let base = body.startIndex
    try body.withUnsafeBytes { raw in
      let reader = ByteReader(bytes: raw)
      var offset = 0
      while offset < raw.count {
        guard raw.count - offset >= SegmentRecord.headerSize else {
          throw unreadable("record header at byte \(offset) overruns the body")
        }
        guard records.count < Int(header.recordCount) else {
          throw unreadable("more records than record_count \(header.recordCount)")
        }
        let record = try parseRecord(reader: reader, at: offset, header: header, base: base, body: body)
        if let previous = lastTime[record.track], record.timestampMilliseconds < previous {
          throw unreadable("timestamps of \(record.track) decrease at record \(records.count)")
        }
        lastTime[record.track] = record.timestampMilliseconds
        records.append(record)
        offset += SegmentRecord.headerSize + record.payload.count
      }
    }
    guard records.count == Int(header.recordCount) else {
      throw unreadable("record_count \(header.recordCount) but the body holds \(records.count) records")
    }
  }

  private static func parseRecord(
    reader: ByteReader, at offset: Int, header: SegmentHeader, base: Data.Index, body: Data
  ) throws -> SegmentRecord {
    let raw = reader.bytes
    guard let kind = TrackKind(rawValue: raw[offset]) else {
      throw MediaError.gap(.unsupportedMedia, "unknown record kind \(raw[offset])")
    }
    guard let codec = Codec(rawValue: raw[offset + 2]) else {
      throw MediaError.gap(.unsupportedMedia, "unknown codec \(raw[offset + 2])")
    }
    guard codec.kind == kind else { throw unreadable("a \(kind) record carries \(codec)") }
    let sampleRate = Int(reader.integer(at: offset + 4, as: UInt32.self))
    let channels = Int(raw[offset + 8])
    let timestamp: Int64 = reader.integer(at: offset + 12)
    let payloadSize = Int(reader.integer(at: offset + 20, as: UInt32.self))
    guard payloadSize <= raw.count - offset - SegmentRecord.headerSize else {
      throw unreadable("record payload of \(payloadSize) bytes at byte \(offset) overruns the body")
    }
    guard timestamp >= header.startMilliseconds, timestamp < header.endMilliseconds else {
      throw unreadable("timestamp \(timestamp) outside [\(header.startMilliseconds), \(header.endMilliseconds))")
    }
    let start = base + offset + SegmentRecord.headerSize
    let payload = body[start..<start + payloadSize]
    switch kind {
    case .video:
      guard sampleRate == 0, channels == 0 else { throw unreadable("video record with audio parameters") }
    case .audio:
      guard [8000, 16000, 32000, 44100, 48000].contains(sampleRate), channels == 1 || channels == 2 else {
        throw MediaError.gap(.unsupportedMedia, "audio of \(sampleRate) Hz × \(channels) is not supported")
      }
      if codec == .aac {
        guard let adts = ADTSHeader(payload) else { throw unreadable("AAC record without an ADTS header") }
        guard adts.objectType == 2 else {
          throw MediaError.gap(.unsupportedMedia, "AAC object type \(adts.objectType) is not AAC-LC")
        }
        guard adts.sampleRate == sampleRate, adts.channelConfiguration == channels,
          adts.frameLength == payloadSize
        else { throw unreadable("ADTS header disagrees with its record") }
      }
    }
    return SegmentRecord(
      track: TrackID(kind, channel: raw[offset + 1]), codec: codec,
      isKeyframe: raw[offset + 3] & SegmentRecord.keyframeFlag != 0, sampleRate: sampleRate, channels: channels,
      timestampMilliseconds: timestamp, payload: payload)
  }

  private static func unreadable(_ message: String) -> MediaError { MediaError.gap(.mediaUnreadable, message) }
}

extension SegmentReader {
  /// Parses a whole object: header, decryption with `key` when the object is encrypted, then the body.
  ///
  /// - Throws: `mediaUnreadable`/`unsupportedMedia` per the spec, `decryptionFailed` when the object is
  ///   encrypted and `key` is missing or wrong.
  ///
  /// An encrypted object is decrypted in place when `object` holds the only reference to its bytes (the
  /// caller handed them over): no second buffer of its size is written.
  public static func parse(_ object: consuming Data, key: [UInt8]?, cipher: AES128CBC) throws -> ParsedSegment {
    let header = try header(of: object)
    guard header.isEncrypted else {
      return ParsedSegment(
        header: header, records: try records(in: object.dropFirst(SegmentHeader.size), header: header))
    }
    guard let key else { throw MediaError.gap(.decryptionFailed, "the object is encrypted and no key was given") }
    let start = object.startIndex + SegmentHeader.size
    let plaintext = try cipher.decrypt(inPlace: &object, from: start, key: key, iv: header.iv)
    return ParsedSegment(header: header, records: try records(in: object[start..<start + plaintext], header: header))
  }
}
