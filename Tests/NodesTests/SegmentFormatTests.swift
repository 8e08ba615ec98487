import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// A small valid object: a keyframe, a P-frame and two AAC frames.
func sampleRecords(start: Int64 = 1_000_000) -> [SegmentRecord] {
  let adtsPayload = Data(repeating: 0x21, count: 20)
  let adts = ADTSHeader.make(sampleRate: 16000, channels: 1, payloadLength: adtsPayload.count)! + adtsPayload
  return [
    SegmentRecord(
      track: TrackID(.video, channel: 0), codec: .h264, isKeyframe: true, timestampMilliseconds: start,
      payload: Data([0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 9, 9])),
    SegmentRecord(
      track: TrackID(.audio, channel: 1), codec: .aac, sampleRate: 16000, channels: 1,
      timestampMilliseconds: start, payload: adts),
    SegmentRecord(
      track: TrackID(.video, channel: 0), codec: .h264, timestampMilliseconds: start + 40,
      payload: Data([0, 0, 0, 1, 0x41, 7, 7])),
    SegmentRecord(
      track: TrackID(.audio, channel: 1), codec: .aac, sampleRate: 16000, channels: 1,
      timestampMilliseconds: start + 64, payload: adts),
  ]
}

func sampleObject(key: [UInt8]? = nil) throws -> Data {
  try SegmentWriter.object(
    records: sampleRecords(), range: MediaRange(startMilliseconds: 1_000_000, endMilliseconds: 1_002_000), key: key,
    iv: key == nil ? nil : [UInt8](repeating: 0x5A, count: 16))
}

func reason(of body: () throws -> Void) -> GapReason? {
  do {
    try body()
    return nil
  } catch let error as MediaError {
    return error.gapReason
  } catch {
    return .unknown
  }
}

@Suite("TSEG reader and writer")
struct SegmentFormatTests {
  let cipher = try! AES128CBC()

  @Test("a written object reads back identically, plain and encrypted")
  func roundTrip() throws {
    let key = (0..<16).map { UInt8($0 * 7) }
    for key in [nil, key] {
      let object = try sampleObject(key: key)
      let parsed = try SegmentReader.parse(object, key: key, cipher: cipher)
      #expect(parsed.header.startMilliseconds == 1_000_000)
      #expect(parsed.header.endMilliseconds == 1_002_000)
      #expect(parsed.header.isEncrypted == (key != nil))
      #expect(parsed.records == sampleRecords())
      #expect(object.count == 64 + Int(parsed.header.bodySize))
    }
  }

  @Test("each invalid header gets the spec's reason")
  func headerErrors() throws {
    let object = try sampleObject()
    func mutated(_ change: (inout Data) -> Void, fixCRC: Bool = true) -> Data {
      var copy = object
      change(&copy)
      if fixCRC {
        let crc = copy.prefix(56).withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { copy.replaceSubrange(56..<60, with: $0) }
      }
      return copy
    }
    let cases: [(String, Data, GapReason)] = [
      ("short", object.prefix(63), .mediaUnreadable),
      ("magic", mutated({ $0[0] = 0x58 }), .mediaUnreadable),
      ("crc", mutated({ $0[20] ^= 1 }, fixCRC: false), .mediaUnreadable),
      ("version", mutated({ $0[4] = 2 }), .unsupportedMedia),
      ("flags", mutated({ $0[8] = 4 }), .unsupportedMedia),
      ("header size", mutated({ $0[6] = 65 }), .mediaUnreadable),
      ("end before start", mutated({ $0.replaceSubrange(24..<32, with: Data(count: 8)) }), .mediaUnreadable),
      ("body size", mutated({ $0[32] ^= 0x10 }), .mediaUnreadable),
      ("truncated body", object.dropLast(3), .mediaUnreadable),
    ]
    for (name, bytes, expected) in cases {
      #expect(reason { _ = try SegmentReader.parse(bytes, key: nil, cipher: cipher) } == expected, "\(name)")
    }
  }

  @Test("each invalid body gets the spec's reason")
  func bodyErrors() throws {
    let range = MediaRange(startMilliseconds: 1_000_000, endMilliseconds: 1_002_000)
    func parse(_ records: [SegmentRecord]) -> GapReason? {
      reason {
        _ = try SegmentReader.parse(try SegmentWriter.object(records: records, range: range), key: nil, cipher: cipher)
      }
    }
    var records = sampleRecords()
    #expect(parse(records) == nil)
    records[2].timestampMilliseconds = 999_999
    #expect(parse(records) == .mediaUnreadable, "timestamp before start")
    records = sampleRecords()
    records[2].timestampMilliseconds = 1_002_000
    #expect(parse(records) == .mediaUnreadable, "timestamp at end")
    records = sampleRecords()
    records[2].timestampMilliseconds = 1_000_000 - 0
    records[0].timestampMilliseconds = 1_000_010
    #expect(parse(records) == .mediaUnreadable, "decreasing within a track")
    records = sampleRecords()
    records[1].sampleRate = 8000
    #expect(parse(records) == .mediaUnreadable, "ADTS disagrees with its record")
    records = sampleRecords()
    records[1].sampleRate = 22050
    #expect(parse(records) == .unsupportedMedia, "unsupported sample rate")
    records = sampleRecords()
    records[1].payload = records[1].payload.dropLast()
    #expect(parse(records) == .mediaUnreadable, "ADTS frame length")

    // A kind that does not match its codec, a record_count that is wrong, an unknown codec.
    var object = try SegmentWriter.object(records: sampleRecords(), range: range)
    object[64] = 2  // first record: audio kind with codec h264
    #expect(reason { _ = try SegmentReader.parse(object, key: nil, cipher: cipher) } == .mediaUnreadable)
    object[64] = 1
    object[66] = 99
    #expect(reason { _ = try SegmentReader.parse(object, key: nil, cipher: cipher) } == .unsupportedMedia)
    object[66] = 1
    var header = try SegmentReader.header(of: object)
    header.recordCount = 3
    let recounted = header.encoded + object.dropFirst(64)
    #expect(reason { _ = try SegmentReader.parse(recounted, key: nil, cipher: cipher) } == .mediaUnreadable)
  }

  @Test("encrypted objects: missing or wrong key is decryptionFailed")
  func decryptionErrors() throws {
    let key = [UInt8](repeating: 0x42, count: 16)
    let object = try sampleObject(key: key)
    #expect(reason { _ = try SegmentReader.parse(object, key: nil, cipher: cipher) } == .decryptionFailed)
    var wrong = key
    wrong[0] ^= 0xFF
    #expect(reason { _ = try SegmentReader.parse(object, key: wrong, cipher: cipher) } == .decryptionFailed)
  }

  @Test("a wrong key is decryptionFailed for every one of 4,000 keys, even those that pass the padding check")
  func everyWrongKeyIsDecryptionFailed() throws {
    // About one wrong key in 256 leaves valid PKCS#7 padding and random records (segment-format.md: a
    // first record that fails any check in an encrypted object is decryptionFailed).
    var generator = SeededGenerator(seed: 0x6B65_7973)
    let key = [UInt8](repeating: 0x42, count: 16)
    let object = try sampleObject(key: key)
    var paddingPassed = 0
    for _ in 0..<4_000 {
      let wrong = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
      guard wrong != key else { continue }
      if (try? cipher.decrypt(object.dropFirst(64), key: wrong, iv: [UInt8](repeating: 0x5A, count: 16))) != nil {
        paddingPassed += 1
      }
      #expect(reason { _ = try SegmentReader.parse(object, key: wrong, cipher: cipher) } == .decryptionFailed)
    }
    #expect(paddingPassed > 0, "some wrong keys must reach the record checks")
  }

  @Test("fuzz: 20,000 mutated objects give a typed error or a valid parse, never a crash")
  func fuzz() throws {
    var generator = SeededGenerator(seed: 0x7153_4547)
    let key = [UInt8](repeating: 9, count: 16)
    let seeds = [try sampleObject(), try sampleObject(key: key)]
    var outcomes: [String: Int] = [:]
    for round in 0..<fuzzCases(20_000) {
      var object = seeds[round % 2]
      switch generator.next() % 5 {
      case 0:
        object = object.prefix(Int(generator.next() % UInt64(object.count + 1)))
      case 1:
        for _ in 0..<(1 + generator.next() % 4) {
          let index = Int(generator.next() % UInt64(object.count))
          object[index] ^= UInt8(1 << (generator.next() % 8))
        }
      case 2:
        // An absurd size in a record's payload_size or the header's counts.
        let offsets = [12, 32, 64 + 20, 64 + 24 + 20 + 20]
        let offset = offsets[Int(generator.next() % UInt64(offsets.count))]
        if offset + 4 <= object.count {
          withUnsafeBytes(of: UInt32.random(in: 0...UInt32.max, using: &generator)) {
            object.replaceSubrange(offset..<offset + 4, with: $0)
          }
        }
      case 3:
        object.append(contentsOf: (0..<Int(generator.next() % 64)).map { _ in UInt8(generator.next() & 0xFF) })
      default:
        let index = Int(generator.next() % UInt64(object.count))
        object[index] = UInt8(generator.next() & 0xFF)
      }
      do {
        let parsed = try SegmentReader.parse(object, key: key, cipher: cipher)
        #expect(parsed.records.count == Int(parsed.header.recordCount))
        outcomes["valid", default: 0] += 1
      } catch let error as MediaError {
        #expect(error.gapReason != nil)
        outcomes[error.gapReason!.rawValue, default: 0] += 1
      }
    }
    #expect(outcomes["mediaUnreadable", default: 0] > 1000)
    #expect(outcomes["decryptionFailed", default: 0] > 100)
  }
}
