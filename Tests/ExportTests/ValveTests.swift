import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing
import TiCloudStorage

/// Decides on decoded pictures: keeps those whose time falls in `keep` (offsets from the file's start).
final class PictureJudge: Node {
  typealias Input = DecodedFrame
  typealias Output = Never
  let name = "PictureJudge"
  let decisions: ValveDecisions
  let keep: [MediaRange]
  private(set) var judged = 0

  init(decisions: ValveDecisions, keep: [MediaRange]) {
    self.decisions = decisions
    self.keep = keep
  }

  func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    judged += 1
    let picture = MediaRange(
      start: input.time, end: input.time.advanced(by: input.duration, notAfter: MediaTime(microseconds: .max)))
    decisions.decide(picture, keep: keep.contains { $0.contains(input.time) })
  }

  func finish(context: NodeContext<Never>) throws { decisions.finish() }
}

@Suite("Valve: packets kept by decisions taken on decoded pictures, in one pass")
struct ValveTests {
  @Test(
    "one pass: pictures judged on one branch, their stretches exported on the other, cut at keyframes or exactly",
    arguments: ExportJob.Cut.allCases)
  func onePass(cut: ExportJob.Cut) throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), seconds: 8, in: directory.url)
    let info = try MediaFileSource.probe(path: file.path)
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let at = { (seconds: Double) in MediaTime(microseconds: Int64(seconds * 1_000_000)) }
    let decisions = ValveDecisions()
    let judge = PictureJudge(
      decisions: decisions, keep: [MediaRange(start: at(2.5), end: at(4.2)), MediaRange(start: at(6.1), end: at(7))])
    let output = directory.url.appendingPathComponent("flagged.mp4")
    let reports = LockedArray<ExportResult>()
    let job = try ExportJob(
      request: .init(
        range: MediaRange(start: info.start, end: info.end), videoTrack: video, audioTrack: audio, output: output,
        cut: cut),
      packets: MediaFileSource(path: file.path),
      branches: { graph in
        // The decisions branch: decode and judge, beside the exported packets.
        let decoder = try FrameDecoder(track: video)
        graph.pipeline.connect(graph.packets, to: decoder)
        graph.pipeline.connect(decoder, to: judge)
      },
      valve: Valve(decisions: decisions, videoTrack: video, audioTrack: audio),
      completion: { reports.append($0) })
    let result = try job.resultWithinDeadline()
    #expect(result.code == .ok, "\(result.message ?? "")")
    let segments = result.report.segments.map { ($0.sourceRange.startMs, $0.sourceRange.endMs) }
    // Each flagged stretch from the keyframe at or before it (keyframes every 2 s) to its end, or the few
    // pictures after it that pictures inside refer to (B-frames: at most the reordering depth, 3 here).
    // Exact: from where each was decided (the first picture judged in it).
    #expect(segments.map(\.0) == (cut == .exact ? [2_520, 6_120] : [2_000, 6_000]), "\(cut): \(segments)")
    #expect(segments.count == 2 && segments[0].1 >= 4_200 && segments[0].1 <= 4_200 + 4 * 40, "\(segments)")
    #expect(segments.count == 2 && segments[1].1 >= 7_000 && segments[1].1 <= 7_000 + 4 * 40, "\(segments)")
    let gap = try #require(result.report.gaps.first { $0.range.startMs == segments[0].1 })
    #expect(gap.range.endMs == segments[1].0 && gap.reasons == [.noRecording], "\(gap)")
    let judged = try MediaFileExportTests.judge(output)
    #expect(Int64(judged.videoFrames) * 40 == result.report.coveredDurationMs, "\(judged)")
    try MediaFileExportTests.expectAudioWithVideo(judged, "valve")
    let errors = try runForStandardError(
      "/usr/bin/ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"])
    #expect(errors.isEmpty, "\(cut): \(errors)")
    #expect(judge.judged == 200)
  }

  @Test("a decider that falls behind the look-ahead fails the export with invalidArgument, leaving no file")
  func lookAheadExceeded() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), seconds: 4, in: directory.url)
    let info = try MediaFileSource.probe(path: file.path)
    let video = TrackID(.video, channel: 0)
    // Nobody decides.
    let valve = Valve(decisions: ValveDecisions(), videoTrack: video, lookAhead: .microseconds(1_000_000))
    let output = directory.url.appendingPathComponent("never.mp4")
    let job = try ExportJob(
      request: .init(
        range: MediaRange(start: info.start, end: info.end), videoTrack: video, audioTrack: nil, output: output),
      packets: MediaFileSource(path: file.path), valve: valve, completion: { _ in })
    let result = try job.resultWithinDeadline()
    #expect(result.code == .invalidArgument, "\(result.code)")
    #expect(result.message?.contains("look-ahead") == true, "\(result.message ?? "")")
    #expect(!FileManager.default.fileExists(atPath: output.path))
  }
}
