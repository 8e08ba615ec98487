import Dispatch
import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing
import TrackRecording

/// HoleCloser's ordering rule (T18 in `record --endpoint`): what is left out of the recordings, and when,
/// for frames arriving from the replay's output threads and gap reports arriving on their queue.
@Suite struct HoleCloserTests {
  static let video = TrackID(.video, channel: 0)
  static let audio = TrackID(.audio, channel: 1)

  /// A closer of both tracks, from 0, whose reports come on a queue of the test's, and what it left out.
  final class Fixture: Sendable {
    let reports = DispatchQueue(label: "hole-closer-tests.reports")
    let cuts = LockedArray<MediaRange>()
    let closer: HoleCloser

    init(tracks: Set<TrackID> = [HoleCloserTests.video, HoleCloserTests.audio]) {
      let cuts = self.cuts
      closer = HoleCloser(recorded: tracks, from: MediaTime(microseconds: 0), reports: reports) { cuts.append($0) }
    }

    /// A frame of `track` at `ms` lasting `lasting` ms (its picture 2×2).
    func frame(_ track: TrackID, at ms: Int64, lasting: Int64) throws -> DecodedFrame {
      DecodedFrame(
        track: track, time: MediaTime(milliseconds: ms), duration: .microseconds(lasting * 1_000),
        frame: try RecorderFixtures.picture(width: 2, height: 2, value: 1))
    }

    /// Every frame of `track` from `from` to `to` ms, `step` ms apart.
    func run(_ track: TrackID, from: Int64, to: Int64, step: Int64) throws {
      for ms in stride(from: from, to: to, by: Int(step)) { closer.admit(try frame(track, at: ms, lasting: step)) }
    }

    /// A gap report of `from`–`to` ms for `tracks` (empty: every track), queued as the replay queues it.
    func report(_ from: Int64, _ to: Int64, tracks: Set<TrackID> = []) {
      let closer = self.closer
      reports.async {
        closer.reported(
          MediaRange(start: MediaTime(milliseconds: from), end: MediaTime(milliseconds: to)), tracks: tracks)
      }
    }

    var leftOut: [String] { cuts.values.map { "\($0.start.milliseconds)–\($0.end.milliseconds)" } }
  }

  @Test("T18: a hole reported of every track is left out when the first frame after it comes, before it is handed on")
  func aReportedHoleIsLeftOut() throws {
    let fixture = Fixture()
    try fixture.run(Self.video, from: 0, to: 3_000, step: 40)
    try fixture.run(Self.audio, from: 0, to: 3_008, step: 64)
    // Reported on the queue before the frame after it is presented: the frame waits for the queue.
    fixture.report(3_000, 7_000)
    #expect(fixture.leftOut.isEmpty)
    fixture.closer.admit(try fixture.frame(Self.video, at: 7_000, lasting: 40))
    // From where the picture's jump starts: every frame handed on started before it.
    #expect(fixture.leftOut == ["3000–7000"])
    // The other track's frame after the hole finds nothing more to leave out.
    fixture.closer.admit(try fixture.frame(Self.audio, at: 7_000, lasting: 64))
    #expect(fixture.leftOut == ["3000–7000"])
  }

  @Test(
    "a gap of one track while the other goes on is kept (the play showed it): only a gap of every recorded track is a hole"
  )
  func aGapOfOneTrackIsKept() throws {
    let fixture = Fixture()
    try fixture.run(Self.video, from: 0, to: 1_000, step: 40)
    fixture.report(1_000, 2_000, tracks: [Self.video])
    fixture.closer.admit(try fixture.frame(Self.video, at: 2_000, lasting: 40))
    #expect(fixture.leftOut.isEmpty)
    // Stated for both tracks (and more): a hole.
    fixture.report(3_000, 4_000, tracks: [Self.video, Self.audio, TrackID(.video, channel: 5)])
    try fixture.run(Self.video, from: 2_040, to: 3_000, step: 40)
    fixture.closer.admit(try fixture.frame(Self.video, at: 4_000, lasting: 40))
    #expect(fixture.leftOut == ["3000–4000"])
  }

  @Test("a jump of less than the tolerance (a frame late or dropped) leaves nothing out, even where a gap was reported")
  func aSmallJumpIsNotAHole() throws {
    let fixture = Fixture(tracks: [Self.video])
    try fixture.run(Self.video, from: 0, to: 1_000, step: 40)
    fixture.report(1_000, 1_080)
    // 1000 → 1100: a jump of 100 ms, not more than the tolerance.
    fixture.closer.admit(try fixture.frame(Self.video, at: 1_100, lasting: 40))
    #expect(fixture.leftOut.isEmpty)
    #expect(HoleCloser.tolerance == .microseconds(100_000))
  }

  @Test("only the part of a reported hole inside the track's jump is left out, never what was recorded")
  func onlyTheJumpIsLeftOut() throws {
    let fixture = Fixture(tracks: [Self.video])
    try fixture.run(Self.video, from: 0, to: 2_000, step: 40)
    // Reported wider than the jump (2000–5000) on both sides, and a hole elsewhere.
    fixture.report(1_500, 6_000)
    fixture.report(9_000, 9_500)
    fixture.closer.admit(try fixture.frame(Self.video, at: 5_000, lasting: 40))
    #expect(fixture.leftOut == ["2000–5000"])
  }

  @Test("a hole at the play's start (after some sound) is left out when the first picture comes")
  func aHoleAtTheStart() throws {
    let fixture = Fixture()
    try fixture.run(Self.audio, from: 0, to: 30, step: 10)
    fixture.report(30, 2_000)
    fixture.closer.admit(try fixture.frame(Self.video, at: 2_000, lasting: 40))
    // From the start of the latest frame handed on (20 ms, the sound) on: 30–2000.
    #expect(fixture.leftOut == ["30–2000"])
  }

  @Test("a stretch is never left out behind the start of a frame already handed on (later frames would go before it)")
  func neverBehindAFrameHandedOn() throws {
    let fixture = Fixture()
    try fixture.run(Self.video, from: 0, to: 3_000, step: 40)
    // The sound went on past the hole's start before the picture's jump came.
    try fixture.run(Self.audio, from: 0, to: 3_500, step: 100)
    fixture.report(3_000, 7_000)
    fixture.closer.admit(try fixture.frame(Self.video, at: 7_000, lasting: 40))
    // The latest frame handed on started at 3400: the cut begins just after it.
    #expect(fixture.cuts.values.map(\.start.microseconds) == [3_400_001])
    #expect(fixture.cuts.values.map(\.end.milliseconds) == [7_000])
  }

  @Test("once the play is over nothing waits for the reports' queue and nothing is left out")
  func afterTheEndNothingWaits() throws {
    let fixture = Fixture(tracks: [Self.video])
    try fixture.run(Self.video, from: 0, to: 1_000, step: 40)
    // The queue is held (as the main queue is while a play stops): a frame after a jump must not wait.
    let held = DispatchSemaphore(value: 0)
    fixture.reports.async { held.wait() }
    fixture.report(1_000, 3_000)
    fixture.closer.finish()
    fixture.closer.admit(try fixture.frame(Self.video, at: 3_000, lasting: 40))
    held.signal()
    fixture.reports.sync {}
    #expect(fixture.leftOut.isEmpty)
  }

  @Test("a play that ends while a frame waits for a held reports' queue lets it go at once, nothing left out")
  func theEndLetsAWaitingFrameGo() throws {
    let fixture = Fixture(tracks: [Self.video])
    try fixture.run(Self.video, from: 0, to: 1_000, step: 40)
    let held = DispatchSemaphore(value: 0)
    fixture.reports.async { held.wait() }
    fixture.report(1_000, 3_000)
    // The frame after the jump waits for the held queue on a thread of its own; the play ends meanwhile
    // (or just before its wait begins: either way it must not wait out the patience).
    let admitted = DispatchSemaphore(value: 0)
    let frame = try fixture.frame(Self.video, at: 3_000, lasting: 40)
    let closer = fixture.closer
    Thread {
      closer.admit(frame); admitted.signal()
    }.start()
    fixture.closer.finish()
    let patience = Double(HoleCloser.reportsPatience.components.seconds)
    #expect(patience >= 10)
    #expect(
      admitted.wait(timeout: .now() + patience / 2) == .success, "the frame waited for the queue after the end")
    held.signal()
    fixture.reports.sync {}
    #expect(fixture.leftOut.isEmpty)
  }
}
