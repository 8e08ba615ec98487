import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// Exports of random ranges over libraries with every kind of damage, checked against the invariants
/// of the seed's export report, whatever the range:
/// - the written source ranges are ascending, disjoint and inside the request, but for the first one,
///   which may begin at the keyframe before the start (and never earlier);
/// - they map to contiguous stretches of the file from 0, and the file lasts what they cover;
/// - covered ranges, video gaps and unprocessed ranges partition the request exactly;
/// - every reason is one the library holds there; no range yields a file without media of it.
@Suite("Export reports over random ranges")
struct ExportPropertyTests {
  struct Library {
    var url: URL
    var keyframes: [Int64]
    /// Stretches (ms offsets from the recording's start) and the video reasons the library holds there.
    var reasons: [(from: Int64, to: Int64, reasons: Set<GapReason>)]
    var duration: Int64

    /// False for a keyframe in a lost object.
    func decodable(_ keyframe: Int64) -> Bool {
      !reasons.contains {
        $0.from <= keyframe && keyframe < $0.to && !$0.reasons.isDisjoint(with: [.notFound, .integrityFailed])
      }
    }
  }

  /// 30 s in 3 s objects, 2 s GOPs (GOPs cross objects): a hole at 9–11 s, the object of 15–18 s missing,
  /// the one of 21–24 s corrupted, a change to 160x120 at 26 s.
  func damagedLibrary(in directory: URL, audio: Codec) throws -> Library {
    let url = directory.appendingPathComponent("lib-\(audio)")
    var options = smallOptions(seconds: 30)
    options.audioCodec = audio
    if audio != .aac { options.audioSampleRate = 8000 }
    options.gaps = [(offset: 9, length: 2)]
    options.videoChanges = [.init(offsetSeconds: 26, codec: .h264, width: 160, height: 120)]
    let summary = try LibrarySynthesizer(options: options).write(to: url)
    let start = recordingStart
    let objects = summary.index.segments.map { ($0.startMs - start, $0.endMs - start) }
    let missing = try #require(objects.firstIndex { $0.0 == 15_000 })
    let corrupted = try #require(objects.firstIndex { $0.0 == 21_000 })
    try LibraryFaults.removeObject(segment: missing, in: url)
    try LibraryFaults.corruptObject(segment: corrupted, in: url)
    let keyframes = summary.videoFrames.filter(\.isKeyframe).map { $0.time - start }
    var reasons: [(from: Int64, to: Int64, reasons: Set<GapReason>)] = [
      (9_000, 11_000, [.noRecording]), (15_000, 18_000, [.notFound]), (21_000, 24_000, [.integrityFailed]),
      // The new size is an incompatible stretch when the file began in the old one (E28, E29).
      (26_000, 30_000, [.unsupportedMedia]), (30_000, 40_000, [.noRecording]), (-10_000, 0, [.noRecording]),
    ]
    // After a lost object, the frames up to the next keyframe cannot be decoded.
    for lostEnd: Int64 in [18_000, 24_000] {
      let next = try #require(keyframes.first { $0 >= lostEnd })
      if next > lostEnd { reasons.append((lostEnd, next, [.noKeyFrame])) }
    }
    return Library(url: url, keyframes: keyframes, reasons: reasons, duration: 30_000)
  }

  /// E25 as proposed, but for the first segment's start: cli.md (a stable interface) has an export from
  /// between keyframes begin at the keyframe before `start` ("the first source range says where it
  /// begins"). Hiding those frames behind an edit list instead was tried (2026-12-01) and dropped: GStreamer
  /// 1.22's qtdemux here then pushes the file from the non-keyframe at the edit's start (the picture is
  /// lost until the next keyframe), as ExoPlayer does (google/ExoPlayer#1659).
  @Test(
    "E25, E26: 600 random ranges (a slice in CI) keep every invariant of the report", arguments: [Codec.aac, .g711a])
  func randomRanges(audio: Codec) throws {
    let directory = try TemporaryDirectory()
    let library = try damagedLibrary(in: directory.url, audio: audio)
    var generator = SeededGenerator(seed: fuzzSeed(0x7072_6F70) &+ UInt64(audio.rawValue))
    let output = directory.url.appendingPathComponent("out.mp4")
    // Starts on, just before and just after keyframes first (where the start rules change), then random.
    let edges = library.keyframes.prefix(4).flatMap { [$0 - 1, $0, $0 + 1] }.map { ($0, $0 + 2_500) }
    var cases = edges
    for _ in 0..<fuzzCases(40) {
      let from = Int64(generator.next() % 33_000) - 1_500
      cases.append((from, from + 1 + Int64(generator.next() % UInt64(33_000 - max(0, from)))))
    }
    for (from, to) in cases {
      let request = range(from, to)
      let (result, _) = try export(library: library.url, range: request, to: output)
      let label = "[\(from), \(to)) \(audio)"
      try check(result, request: request, library: library, label: label)
      if let file = result.file { try FileManager.default.removeItem(at: file) }
    }
  }

  func check(_ result: ExportResult, request: MediaRange, library: Library, label: String) throws {
    let report = result.report
    let start = request.start.milliseconds
    let end = request.end.milliseconds
    let offset = { (ms: Int64) in ms - recordingStart }
    // Sources: ascending, disjoint, inside the request but for the keyframe before its start.
    let keyframeBefore = library.keyframes.last { $0 <= offset(start) && library.decodable($0) }
      .map { $0 + recordingStart }
    var previousEnd = Int64.min
    for (position, segment) in report.segments.enumerated() {
      let source = segment.sourceRange
      #expect(source.startMs < source.endMs, "\(label)")
      #expect(source.startMs >= previousEnd, "\(label): sources overlap")
      #expect(source.endMs <= end, "\(label): a source ends after the request")
      if position == 0 && source.startMs < start {
        #expect(
          source.startMs == keyframeBefore, "\(label): begins at \(offset(source.startMs)), not the keyframe before")
      } else {
        #expect(source.startMs >= start, "\(label): a source before the start")
      }
      previousEnd = source.endMs
    }
    // Outputs contiguous from 0.
    var cursor: Int64 = 0
    for segment in report.segments {
      #expect(segment.outputStartMs == cursor, "\(label)")
      #expect(segment.outputEndMs - segment.outputStartMs == segment.sourceRange.durationMs, "\(label)")
      cursor = segment.outputEndMs
    }
    #expect(report.coveredDurationMs == cursor, "\(label)")
    // Covered ∪ video gaps ∪ unprocessed = request, without overlap.
    let videoTrack = ExportReport.Track(TrackID(.video, channel: 0))
    var pieces = report.segments.map { (max($0.sourceRange.startMs, start), $0.sourceRange.endMs, "covered") }
    pieces += report.gaps.filter { $0.tracks.contains(videoTrack) }.map { ($0.range.startMs, $0.range.endMs, "gap") }
    pieces += report.unprocessedRanges.map { ($0.startMs, $0.endMs, "unprocessed") }
    pieces.sort { $0.0 < $1.0 }
    var at = start
    for piece in pieces where piece.1 > piece.0 {
      #expect(piece.0 == at, "\(label): \(piece.2) at \(offset(piece.0)), expected \(offset(at)): \(describe(report))")
      at = max(at, piece.1)
    }
    #expect(at == end, "\(label): the partition ends at \(offset(at)): \(describe(report))")
    // Every gap (audio ones too) and unprocessed range lies inside the request, in order.
    let gapRanges = report.gaps.map(\.range)
    #expect(gapRanges == gapRanges.sorted(), "\(label): gaps out of order")
    #expect(report.unprocessedRanges == report.unprocessedRanges.sorted(), "\(label)")
    for inside in gapRanges + report.unprocessedRanges {
      #expect(inside.startMs >= start && inside.endMs <= end && inside.startMs < inside.endMs, "\(label): \(inside)")
    }
    // Reasons the library holds.
    for gap in report.gaps where gap.tracks.contains(videoTrack) {
      let held = library.reasons.filter { $0.from < offset(gap.range.endMs) && $0.to > offset(gap.range.startMs) }
        .reduce(into: Set<GapReason>()) { $0.formUnion($1.reasons) }
      #expect(
        Set(gap.reasons).isSubset(of: held),
        "\(label): \(gap.reasons) at \(offset(gap.range.startMs))–\(offset(gap.range.endMs))")
    }
    // A file exactly when something was covered; it lasts what was covered.
    #expect((result.code == .ok) == (report.coveredDurationMs > 0), "\(label): \(result.code)")
    if result.code == .ok {
      let probe = try Probe(try #require(result.file))
      let streams = try streamDurations(try #require(result.file))
      #expect(
        abs(probe.duration - Double(report.coveredDurationMs) / 1000) <= 0.045,
        "\(label): \(probe.duration) s, \(streams): \(describe(report))")
    } else {
      #expect(result.code == .noRecordableMedia, "\(label): \(result.code)")
    }
  }

  func describe(_ report: ExportReport) -> String {
    let o = { (ms: Int64) in ms - recordingStart }
    return "segments "
      + report.segments.map { "\(o($0.sourceRange.startMs))–\(o($0.sourceRange.endMs))" }.joined(separator: " ")
      + "; gaps "
      + report.gaps.map {
        "\(o($0.range.startMs))–\(o($0.range.endMs)) \($0.tracks.count) \($0.reasons.map(\.rawValue))"
      }.joined(separator: " ")
      + "; unprocessed \(report.unprocessedRanges.map { "\(o($0.startMs))–\(o($0.endMs))" })"
  }

  func streamDurations(_ file: URL) throws -> String {
    try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-show_entries", "stream=codec_type,start_time,duration", "-of", "csv=p=0", file.path]
    ).replacingOccurrences(of: "\n", with: " ")
  }

  /// 24 s in 3 s objects, 2 s GOPs: the object of 6–9 s unlisted (a hole), the one after it (which starts
  /// mid-GOP) without its leading keyframe; the object of 15–18 s corrupted, the one after it without its
  /// leading keyframe.
  func leadingKeyframeLibrary(in directory: URL) throws -> (url: URL, keyframes: [Int64]) {
    let url = directory.appendingPathComponent("lib-lead")
    let summary = try LibrarySynthesizer(options: smallOptions(seconds: 24)).write(to: url)
    let objects = summary.index.segments.map { $0.startMs - recordingStart }
    let afterHole = try #require(objects.firstIndex(of: 9_000))
    let corrupted = try #require(objects.firstIndex(of: 15_000))
    try LibraryFaults.stripLeadingKeyframe(segment: afterHole, in: url)
    try LibraryFaults.corruptObject(segment: corrupted, in: url)
    try LibraryFaults.stripLeadingKeyframe(segment: corrupted + 1, in: url)
    try LibraryFaults.rewriteIndex(in: url) { segments in
      segments.filter { $0.startMs != recordingStart + 6_000 }
    }
    let keyframes = summary.videoFrames.filter(\.isKeyframe).map { $0.time - recordingStart }
    return (url, keyframes)
  }

  @Test(
    "E26: a missing leading keyframe right after a hole and right after a rejected object: exactly the reasons the library holds"
  )
  func leadingKeyframeAfterHoleAndRejectedObject() throws {
    let directory = try TemporaryDirectory()
    let library = try leadingKeyframeLibrary(in: directory.url)
    let videoTrack = ExportReport.Track(TrackID(.video, channel: 0))
    // The first keyframe left after each damaged stretch: the one after the stripped object's first.
    let afterHole = try #require(library.keyframes.filter { $0 >= 9_000 }.dropFirst().first)
    let afterCorrupted = try #require(library.keyframes.filter { $0 >= 18_000 }.dropFirst().first)
    var generator = SeededGenerator(seed: fuzzSeed(0x6C65_6164))
    var cases: [(Int64, Int64)] = [(8_000, 16_000), (14_000, 23_000), (0, 24_000)]
    for _ in 0..<fuzzCases(6) {
      let from = Int64(generator.next() % 9_000)
      cases.append((from, 20_000 + Int64(generator.next() % 4_000)))
    }
    // Anywhere: inside the hole, inside the undecodable groups, ending in them.
    for _ in 0..<fuzzCases(24) {
      let from = Int64(generator.next() % 22_000)
      cases.append((from, from + 1 + Int64(generator.next() % UInt64(24_000 - from))))
    }
    let output = directory.url.appendingPathComponent("out.mp4")
    for (from, to) in cases {
      let (result, _) = try export(library: library.url, range: range(from, to), to: output)
      let label = "[\(from), \(to))"
      let gaps = result.report.gaps.filter { $0.tracks.contains(videoTrack) }
      let hole = gaps.first { $0.range.startMs - recordingStart <= 6_000 && $0.range.endMs - recordingStart > 6_000 }
      if from < 6_000 && to > 6_000 {
        let gap = try #require(hole, "\(label): \(gaps)")
        #expect(gap.range.endMs - recordingStart == min(afterHole, to), "\(label): \(gap)")
        let reasons: Set<GapReason> = to > 9_000 ? [.noRecording, .noKeyFrame] : [.noRecording]
        #expect(Set(gap.reasons) == reasons, "\(label): \(gap.reasons)")
      }
      if from < 15_000 && to > afterCorrupted {
        let gap = try #require(
          gaps.first { $0.range.startMs - recordingStart <= 15_000 && $0.range.endMs - recordingStart > 15_000 },
          "\(label): \(gaps)")
        #expect(gap.range.endMs - recordingStart == afterCorrupted, "\(label): \(gap)")
        #expect(Set(gap.reasons) == [.integrityFailed, .noKeyFrame], "\(label): \(gap.reasons)")
      }
      #expect(!gaps.contains { $0.reasons.contains(.trackUnavailable) }, "\(label): \(gaps)")
      // Every reason is the library's there: the hole, the undecodable groups, the corrupted object.
      let held: [(Int64, Int64, GapReason)] = [
        (6_000, 9_000, .noRecording), (9_000, afterHole, .noKeyFrame), (15_000, 18_000, .integrityFailed),
        (18_000, afterCorrupted, .noKeyFrame), (24_000, 30_000, .noRecording),
      ]
      for gap in gaps {
        let (start, end) = (gap.range.startMs - recordingStart, gap.range.endMs - recordingStart)
        let there = Set(held.filter { $0.0 < end && $0.1 > start }.map(\.2))
        #expect(Set(gap.reasons) == there, "\(label): \(gap.reasons) at \(start)–\(end)")
      }
      if let file = result.file { try FileManager.default.removeItem(at: file) }
    }
  }
}
