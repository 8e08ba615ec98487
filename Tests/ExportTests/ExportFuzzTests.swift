import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// Whole exports of damaged libraries and random command lines: whatever the input, the export ends
/// (once) with a consistent report, a file exactly when it succeeded, and nothing else left on disk.
@Suite("Fuzzing whole exports and the command line")
struct ExportFuzzTests {
  @Test("exports of libraries with a structurally mutated object end consistently, with no stray file")
  func exports() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library)
    let pristine = try RecordingIndex.decode(try Data(contentsOf: library.appendingPathComponent("index.json")))
    let cipher = try AES128CBC()
    let originals = try pristine.segments.map { segment in
      try Data(contentsOf: library.appendingPathComponent(segment.url))
    }
    let parsed = try originals.map { try SegmentReader.parse($0, key: nil, cipher: cipher) }
    var mutators = parsed.enumerated().map { offset, object in
      RecordMutator(seed: fuzzSeed(0x6578_706F) &+ UInt64(offset), records: object.records, range: object.header.range)
    }
    var generator = SeededGenerator(seed: fuzzSeed(0x7261_6E67))
    let output = directory.url.appendingPathComponent("out.mp4")
    var codes: [String: Int] = [:]
    let cases = fuzzCases(24)
    for _ in 0..<cases {
      // Restore the library, then damage one object (and, sometimes, make the index agree with it).
      var index = pristine
      for (segment, bytes) in zip(pristine.segments, originals) {
        try bytes.write(to: library.appendingPathComponent(segment.url))
      }
      let victim = Int(generator.next() % UInt64(index.segments.count))
      let (object, key) = try mutators[victim].object()
      try object.write(to: library.appendingPathComponent(index.segments[victim].url))
      if generator.next() % 4 != 0 {
        index.segments[victim].size = object.count
        index.segments[victim].sha256 = SHA256Digest.hexHash(object)
        index.segments[victim].key = key.map { Hex.encode($0) }
      }
      try index.encoded().write(to: library.appendingPathComponent("index.json"))
      let from = Int64(generator.next() % 7000) - 500
      let to = from + 1 + Int64(generator.next() % 7000)
      let requested = range(from, to)
      let (result, _) = try export(library: library, range: requested, to: output)
      codes[result.code.name, default: 0] += 1

      let report = result.report
      #expect(report.coveredDurationMs == report.segments.reduce(0) { $0 + $1.sourceRange.durationMs })
      var cursor: Int64 = 0
      for segment in report.segments {
        #expect(segment.outputStartMs == cursor)
        #expect(segment.sourceRange.startMs < segment.sourceRange.endMs)
        cursor = segment.outputEndMs
      }
      for gap in report.gaps {
        #expect(gap.range.startMs >= requested.start.milliseconds && gap.range.endMs <= requested.end.milliseconds)
        #expect(!gap.reasons.isEmpty)
      }
      if result.code == .ok {
        let file = try #require(result.file)
        #expect(Array(try topLevelBoxTypes(file).prefix(2)) == ["ftyp", "moov"])
        #expect(result.durationMs == report.coveredDurationMs)
        try FileManager.default.removeItem(at: file)
      } else {
        #expect(result.file == nil)
        #expect(result.code == .noRecordableMedia, "\(result.code) \(result.message ?? "")")
      }
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
    }
    print("export fuzz: \(cases) exports, \(codes.sorted { $0.key < $1.key })")
  }

  @Test("random command lines exit 0, 1 or 2 by themselves, with one line on stderr when they fail")
  func commandLines() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: library)
    var generator = SeededGenerator(seed: fuzzSeed(0x636C_6921))
    func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
    let values = [
      "", "0", "-1", "1", "255", "256", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e3",
      "nan", "--out", "-", "/", ".", "..", "é", "\u{0}x", String(recordingStart), String(recordingStart + 2000),
      "2026-11-30T00:00:00Z", "2026-13-45T99:99:99Z", "file://\(library.path)", "file:///nonexistent", "http://x",
      directory.url.appendingPathComponent("o.mp4").path, directory.url.path, "1x1", "4096x4096", "1:1", "h265",
    ]
    let exportFlags = [
      "--endpoint", "--token", "--start", "--end", "--video-channel", "--audio-channel", "--out", "--report",
      "--quiet", "--progress-lines", "--verbose", "--bogus",
    ]
    let cases = fuzzCases(40)
    for _ in 0..<cases {
      var arguments = ["export"]
      // Mostly a valid command line with one thing wrong, sometimes noise.
      if generator.next() % 3 != 0 {
        arguments += [
          "--endpoint", "file://\(library.path)", "--start", String(recordingStart), "--end",
          String(recordingStart + 2000), "--video-channel", "0", "--out",
          directory.url.appendingPathComponent("o.mp4").path,
        ]
        let at = 1 + Int(generator.next() % UInt64(arguments.count - 1))
        switch generator.next() % 3 {
        case 0: arguments[at] = pick(values)
        case 1: arguments.remove(at: at)
        default: arguments.insert(contentsOf: [pick(exportFlags), pick(values)], at: at)
        }
      } else {
        for _ in 0..<(generator.next() % 8) {
          arguments.append(generator.next() % 2 == 0 ? pick(exportFlags) : pick(values))
        }
      }
      let finished = try tipipe(arguments, in: directory.url)
      #expect(finished.reason == .exit, "\(arguments)")
      #expect([0, 1, 2].contains(finished.status), "\(arguments): \(finished.status)")
      if finished.status != 0 {
        #expect(finished.stderr.split(separator: "\n").count == 1, "\(arguments): \(finished.stderr)")
      }
      // Whatever it did, the library is intact and only regular output files appeared.
      #expect(FileManager.default.fileExists(atPath: library.appendingPathComponent("index.json").path))
      for name in try FileManager.default.contentsOfDirectory(atPath: directory.url.path) where name != "lib" {
        #expect(!name.hasPrefix("."), "a temporary file was left: \(name)")
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent(name))
      }
    }
  }
}
