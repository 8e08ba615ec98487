import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Structure-aware fuzzing of the reader, the demuxer and the index")
struct StructuredFuzzTests {
  /// The records and range of one real 3-second object (H.264 + AAC).
  func realObject() throws -> ([SegmentRecord], MediaRange) {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: directory.url)
    let index = try RecordingIndex.decode(try Data(contentsOf: directory.url.appendingPathComponent("index.json")))
    let parsed = try SegmentReader.parse(
      try Data(contentsOf: directory.url.appendingPathComponent(index.segments[0].url)), key: nil,
      cipher: try AES128CBC())
    return (parsed.records, parsed.header.range)
  }

  @Test("mutated records re-encoded with valid CRCs reach every check: a typed reason or a valid parse")
  func records() throws {
    let (records, range) = try realObject()
    var mutator = RecordMutator(seed: fuzzSeed(0x7365_6773), records: records, range: range)
    let cipher = try AES128CBC()
    // A fresh demuxer every 1,000 objects: the harness keeps what it collected.
    var demuxer = try NodeHarness(SegmentDemuxer())
    var failures: [NodeFailure] = []
    let segment = RecordingIndex.Segment(
      id: "fuzz", startMs: range.start.milliseconds, endMs: range.end.milliseconds, url: "", size: 0, sha256: "",
      key: nil, tracks: [])
    var outcomes: [String: Int] = [:]
    let cases = fuzzCases(3_000)
    for round in 0..<cases {
      let (object, key) = try mutator.object()
      do {
        let parsed = try SegmentReader.parse(object, key: key, cipher: cipher)
        #expect(parsed.records.count == Int(parsed.header.recordCount))
        outcomes["valid", default: 0] += 1
        demuxer.push(SegmentObject(segment: segment, parsed: parsed))
      } catch let error as MediaError {
        #expect(error.gapReason != nil, "\(error)")
        // The right key is always given: only a first record that fails in an encrypted object is
        // decryptionFailed (segment-format.md), never a plaintext one.
        if key == nil { #expect(error.gapReason != .decryptionFailed) }
        outcomes[error.gapReason?.rawValue ?? "-", default: 0] += 1
      }
      if round % 64 == 63 {
        demuxer.runUntilIdle()
        _ = demuxer.readOutput()
      }
      if round % 1000 == 999 {
        failures += demuxer.reportedFailures
        _ = demuxer.finish()  // stops its pipeline, so what it collected is released
        demuxer = try NodeHarness(SegmentDemuxer())
      }
    }
    demuxer.runUntilIdle()
    failures += demuxer.reportedFailures
    // The demuxer took every valid object, whatever its records said; what it refused it said why.
    #expect(
      failures.allSatisfy { ($0.error as? MediaError).map { !$0.message.isEmpty } ?? false },
      "\(failures.prefix(3))"
    )
    #expect(outcomes["valid", default: 0] > cases / 20, "\(outcomes)")
    #expect(outcomes["mediaUnreadable", default: 0] > cases / 20, "\(outcomes)")
    #expect(outcomes["unsupportedMedia", default: 0] > 0, "\(outcomes)")
    print("record fuzz: \(cases) cases, \(outcomes.sorted { $0.key < $1.key })")
  }

  @Test("index.json of every shape: a typed error naming what is wrong, or an index with sane values")
  func indexes() throws {
    var generator = SeededGenerator(seed: fuzzSeed(0x696E_6478))
    func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
    let numbers = [
      "0", "-1", "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
      "18446744073709551616", "1.5", "NaN", "\"1\"", "null", "true", "[]", "{}", "1795996800000",
      "4611686018427387", "4611686018427388", "1E2", "-0",
    ]
    func entry() -> String {
      var fields = [
        "\"id\":\(pick(["\"a\"", "1", "null", "\"\(String(repeating: "x", count: 300))\""]))",
        "\"start_ms\":\(pick(numbers))", "\"end_ms\":\(pick(numbers))",
        "\"url\":\(pick(["\"objects/a.tseg\"", "\"/dev/zero\"", "\"\"", "7"]))",
        "\"size\":\(pick(numbers))", "\"sha256\":\"00\"",
        "\"key\":\(pick(["null", "\"zz\"", "\"00112233445566778899aabbccddeeff\"", "5"]))",
        "\"tracks\":\(pick(["[]", "[{\"kind\":\"video\",\"channel_id\":0,\"codec\":\"h264\"}]", "[{\"kind\":7}]", "{}"]))",
      ]
      if generator.next() % 4 == 0 { fields.remove(at: Int(generator.next() % UInt64(fields.count))) }
      if generator.next() % 8 == 0 { fields.append(fields[0]) }
      return "{" + fields.joined(separator: ",") + "}"
    }
    let cases = fuzzCases(2_000)
    var outcomes = [0, 0]
    for _ in 0..<cases {
      var text: String
      switch generator.next() % 6 {
      case 0:
        let depth = Int(generator.next() % 5000)
        text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
      case 1:
        text =
          "{\"device_id\":\"d\",\"segments\":["
          + Array(repeating: entry(), count: Int(generator.next() % 2000))
          .joined(separator: ",") + "]}"
      case 2:
        text = String(
          (0..<Int(generator.next() % 200)).map { _ in Character(UnicodeScalar(UInt8(generator.next() % 128))) })
      default:
        text =
          "{\"device_id\":\(pick(["\"d\"", "1", "null"])),\"segments\":["
          + (0..<Int(generator.next() % 6)).map { _ in entry() }.joined(separator: ",") + "]}"
      }
      do {
        let index = try RecordingIndex.decode(Data(text.utf8), source: "fuzz.json")
        for segment in index.segments {
          #expect(MediaTime.validMilliseconds.contains(segment.startMs) && segment.endMs > segment.startMs)
          #expect(segment.size >= 0)
          _ = segment.range.duration
        }
        _ = index.mergedRanges(in: MediaRange(startMilliseconds: 0, endMilliseconds: 4_000_000_000_000))
        outcomes[0] += 1
      } catch let error as MediaError {
        #expect(error.kind == .serviceUnavailable)
        #expect(error.message.hasPrefix("fuzz.json is malformed"), "\(error.message)")
        outcomes[1] += 1
      }
    }
    #expect(outcomes[0] > 0 && outcomes[1] > 0, "\(outcomes)")
  }
}
