import Nodes
import PipelineGraph
import Testing

/// Every report rule of the seed's ExportTask as a table: what the exporter wrote and the gap events it
/// got, and the report that follows. Times in ms from 0 unless a case says µs.
@Suite("ExportTimeline")
struct ExportTimelineTests {
  static let video = TrackID(.video, channel: 0)
  static let audio = TrackID(.audio, channel: 1)

  struct Case: CustomTestStringConvertible, Sendable {
    var name: String
    var range = (0 as Int64, 10_000 as Int64)
    var withAudio = true
    var fileHasAudio = true
    /// Source stretches written, in µs.
    var stretches: [(Int64, Int64)] = []
    var open: (Int64, Int64)? = nil
    var gaps: [(Int64, Int64, TrackID?, [GapReason])] = []
    var scannedThrough: Int64? = nil
    var termination = ExportTermination.exhausted
    /// The code the SDK reports the ending with (the timeline only carries it), and the failure.
    var cause: Int32 = 0
    var failure: MediaError.Kind? = nil
    // Expected.
    var segments: [(Int64, Int64, Int64, Int64)] = []
    var reportGaps: [(Int64, Int64, Int, [GapReason])] = []
    var unprocessed: [(Int64, Int64)] = []
    var complete = false

    var testDescription: String { name }
  }

  static func ms(_ value: Int64) -> Int64 { value * 1000 }

  static let cases: [Case] = [
    Case(
      name: "a whole range written is one segment from output 0, complete", stretches: [(0, ms(10_000))],
      segments: [(0, 10_000, 0, 10_000)], complete: true),
    Case(
      name: "the first segment may begin at the keyframe before the start", range: (2500, 7500),
      stretches: [(ms(2000), ms(7500))], segments: [(2000, 7500, 0, 5500)], complete: true),
    Case(
      name: "(a) a start on a keyframe begins there, not a GOP earlier", range: (2000, 7500),
      stretches: [(ms(2000), ms(7500))], segments: [(2000, 7500, 0, 5500)], complete: true),
    Case(
      name: "gaps are cut out: outputs contiguous, a gap of every track per hole",
      stretches: [(0, ms(3000)), (ms(6000), ms(9000))],
      gaps: [(3000, 6000, video, [.notFound]), (9000, 10_000, video, [.trackUnavailable])],
      segments: [(0, 3000, 0, 3000), (6000, 9000, 3000, 6000)],
      reportGaps: [(3000, 6000, 2, [.notFound]), (9000, 10_000, 2, [.trackUnavailable])]),
    Case(
      name: "the reasons of every event over one hole, in order", stretches: [(0, ms(3000)), (ms(7000), ms(10_000))],
      gaps: [(3000, 6000, nil, [.integrityFailed]), (6000, 7000, video, [.noKeyFrame])],
      segments: [(0, 3000, 0, 3000), (7000, 10_000, 3000, 6000)],
      reportGaps: [(3000, 7000, 2, [.integrityFailed, .noKeyFrame])]),
    Case(
      name: "a hole no event explains is unknown (never guessed)", stretches: [(0, ms(3000))],
      segments: [(0, 3000, 0, 3000)], reportGaps: [(3000, 10_000, 2, [.unknown])]),
    Case(
      name: "(b) nothing playable in the range: noRecordableMedia, the whole range one gap",
      gaps: [(0, 10_000, video, [.notFound])], termination: .failed, cause: 6119, failure: .noMedia,
      reportGaps: [(0, 10_000, 2, [.notFound])]),
    Case(
      name: "(c) a start at a format-change keyframe keeps the range", range: (5000, 10_000),
      stretches: [(ms(5000), ms(10_000))], segments: [(5000, 10_000, 0, 5000)], complete: true),
    Case(
      name: "(d) a video channel the recording lacks: trackUnavailable, nothing to export",
      gaps: [(0, 10_000, video, [.trackUnavailable])], termination: .failed, cause: 6119, failure: .noMedia,
      reportGaps: [(0, 10_000, 2, [.trackUnavailable])]),
    Case(
      name: "(e) an audio channel the recording lacks: the file has no audio, an audio gap everywhere",
      fileHasAudio: false, stretches: [(0, ms(10_000))], gaps: [(0, 10_000, audio, [.trackUnavailable])],
      segments: [(0, 10_000, 0, 10_000)], reportGaps: [(0, 10_000, 1, [.trackUnavailable])]),
    Case(
      name: "a file without the audio track has an audio gap over each segment even without an event",
      fileHasAudio: false, stretches: [(0, ms(4000)), (ms(6000), ms(10_000))],
      gaps: [(4000, 6000, video, [.noRecording])], segments: [(0, 4000, 0, 4000), (6000, 10_000, 4000, 8000)],
      reportGaps: [
        (0, 4000, 1, [.trackUnavailable]), (4000, 6000, 2, [.noRecording]), (6000, 10_000, 1, [.trackUnavailable]),
      ]),
    Case(
      name: "(f) audio before a format-change cut is not a gap: only the cut is",
      stretches: [(0, ms(6000))], gaps: [(6000, 10_000, video, [.unsupportedMedia])],
      segments: [(0, 6000, 0, 6000)], reportGaps: [(6000, 10_000, 2, [.unsupportedMedia])]),
    Case(
      name: "(g) audio gaps only where the file has video; pieces under 200 ms at a segment's edge are none",
      stretches: [(0, ms(3000)), (ms(6000), ms(10_000))],
      gaps: [
        (2900, 6100, audio, [.notFound]), (3000, 6000, video, [.notFound]), (8000, 8500, audio, [.mediaUnreadable]),
      ],
      segments: [(0, 3000, 0, 3000), (6000, 10_000, 3000, 7000)],
      reportGaps: [(3000, 6000, 2, [.notFound]), (8000, 8500, 1, [.mediaUnreadable])]),
    Case(
      name: "an audio gap cut by a segment's edge to 200 ms or more is reported",
      stretches: [(0, ms(3000)), (ms(6000), ms(10_000))],
      gaps: [(2700, 6000, audio, [.trackUnavailable]), (3000, 6000, video, [.notFound])],
      segments: [(0, 3000, 0, 3000), (6000, 10_000, 3000, 7000)],
      reportGaps: [(2700, 3000, 1, [.trackUnavailable]), (3000, 6000, 2, [.notFound])]),
    Case(
      name: "without an audio track requested, video-level gaps name the video track alone", withAudio: false,
      stretches: [(ms(1000), ms(10_000))], gaps: [(0, 1000, video, [.noRecording])],
      segments: [(1000, 10_000, 0, 9000)], reportGaps: [(0, 1000, 1, [.noRecording])]),
    Case(
      name: "interrupted: the rest after what was written is unprocessed", stretches: [(0, ms(4000))],
      scannedThrough: 4500, termination: .interrupted, cause: 6014, segments: [(0, 4000, 0, 4000)],
      unprocessed: [(4000, 10_000)]),
    Case(
      name: "interrupted after a gap event: the gap is reported, the rest unprocessed", stretches: [(0, ms(3000))],
      gaps: [(3000, 6000, video, [.notFound])], termination: .interrupted, cause: 6014,
      segments: [(0, 3000, 0, 3000)], reportGaps: [(3000, 6000, 2, [.notFound])], unprocessed: [(6000, 10_000)]),
    Case(
      name: "cancelled with a stretch open: it counts as far as written; media read beyond is not a gap",
      open: (0, ms(5000)), scannedThrough: 5200, termination: .cancelled, cause: 6115,
      segments: [(0, 5000, 0, 5000)], unprocessed: [(5000, 10_000)]),
    Case(
      name: "milliseconds are rounded once (nearest): the partition is exact",
      stretches: [(1_000_500, 4_999_499), (6_000_499, 10_000_000)], gaps: [(0, 1001, video, [.noRecording])],
      segments: [(1001, 4999, 0, 3998), (6000, 10_000, 3998, 7998)],
      reportGaps: [(0, 1001, 2, [.noRecording]), (4999, 6000, 2, [.unknown])]),
    Case(
      name: "a stretch shorter than a millisecond is no segment",
      stretches: [(1_000_000, 1_000_400), (ms(2000), ms(10_000))], gaps: [(0, 2000, video, [.noKeyFrame])],
      segments: [(2000, 10_000, 0, 8000)], reportGaps: [(0, 2000, 2, [.noKeyFrame])]),
  ]

  @Test("report rules (E21, E24)", arguments: cases)
  func rule(_ c: Case) {
    let range = MediaRange(startMilliseconds: c.range.0, endMilliseconds: c.range.1)
    var timeline = ExportTimeline(range: range, videoTrack: Self.video, audioTrack: c.withAudio ? Self.audio : nil)
    timeline.fileHasAudio = c.fileHasAudio
    for stretch in c.stretches {
      timeline.add(
        stretch: MediaRange(start: MediaTime(microseconds: stretch.0), end: MediaTime(microseconds: stretch.1)))
    }
    for gap in c.gaps {
      timeline.record(
        RecordingGap(
          range: MediaRange(startMilliseconds: gap.0, endMilliseconds: gap.1), tracks: gap.2.map { [$0] } ?? [],
          reasons: gap.3))
    }
    if let scanned = c.scannedThrough { timeline.scan(through: MediaTime(milliseconds: scanned)) }
    let open = c.open.map { MediaRange(start: MediaTime(microseconds: $0.0), end: MediaTime(microseconds: $0.1)) }
    let report = timeline.report(termination: c.termination, cause: c.cause, failure: c.failure, open: open)

    #expect(report.requestedRange == ExportReport.Range(startMs: c.range.0, endMs: c.range.1))
    #expect(
      report.segments.map { [$0.sourceRange.startMs, $0.sourceRange.endMs, $0.outputStartMs, $0.outputEndMs] }
        == c.segments.map { [$0.0, $0.1, $0.2, $0.3] })
    #expect(report.coveredDurationMs == c.segments.reduce(0) { $0 + $1.1 - $1.0 })
    #expect(
      report.gaps.map { [$0.range.startMs, $0.range.endMs, Int64($0.tracks.count)] }
        == c.reportGaps.map { [$0.0, $0.1, Int64($0.2)] })
    #expect(report.gaps.map(\.reasons) == c.reportGaps.map(\.3))
    #expect(report.unprocessedRanges.map { [$0.startMs, $0.endMs] } == c.unprocessed.map { [$0.0, $0.1] })
    #expect(report.complete == c.complete)
    #expect(report.termination == c.termination && report.cause == c.cause)
    // The partition: segments (from the request's start), video-level gaps and unprocessed ranges tile it.
    var pieces = report.segments.map { (max($0.sourceRange.startMs, c.range.0), $0.sourceRange.endMs) }
    pieces += report.gaps.filter { $0.tracks.count == (c.withAudio ? 2 : 1) }.map { ($0.range.startMs, $0.range.endMs) }
    pieces += report.unprocessedRanges.map { ($0.startMs, $0.endMs) }
    var at = c.range.0
    for piece in pieces.sorted(by: { $0.0 < $1.0 }) {
      #expect(piece.0 == at)
      at = piece.1
    }
    #expect(at == c.range.1)
  }

  @Test("progress follows the scan, monotonic, and covered milliseconds count an open stretch")
  func progress() {
    var timeline = ExportTimeline(
      range: MediaRange(startMilliseconds: 1000, endMilliseconds: 5000), videoTrack: Self.video, audioTrack: nil)
    #expect(timeline.progress == 0)
    timeline.scan(through: MediaTime(milliseconds: 2000))
    #expect(timeline.progress == 0.25)
    timeline.scan(through: MediaTime(milliseconds: 1500))
    #expect(timeline.progress == 0.25)
    timeline.scan(through: MediaTime(milliseconds: 9000))
    #expect(timeline.progress == 1)
    timeline.add(stretch: MediaRange(startMilliseconds: 1000, endMilliseconds: 2000))
    #expect(timeline.coveredMilliseconds(open: MediaRange(startMilliseconds: 3000, endMilliseconds: 3500)) == 1500)
  }
}
