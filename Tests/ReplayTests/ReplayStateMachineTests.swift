import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

/// The rules of play as tables of inputs and what the state machine answers (issue 25): no graph, no
/// clock, no threads. Each test names the rules it checks; the replay tests check the same rules
/// through real graphs.
@Suite struct ReplayStateMachineTests {
  private let video = TrackID(.video, channel: 0)
  private let audio = TrackID(.audio, channel: 1)
  private let start: Int64 = 1_764_460_800_000

  /// A machine with a video and an audio output and an accepted play of `[start, start + 60 s)`.
  private func playing(initial: Int64? = nil) -> (ReplayStateMachine, Replay.OutputID, Replay.OutputID) {
    var rules = ReplayStateMachine()
    let (v, _) = rules.bind(video)
    let (a, _) = rules.bind(audio)
    #expect(rules.play(span(start, start + 60_000), from: initial.map(at), token: "t") == (.ok, false))
    return (rules, v, a)
  }

  /// The code a seek to `time` answers (ok when accepted).
  private func seekCode(_ rules: inout ReplayStateMachine, _ time: Int64) -> TiErrorCode {
    switch rules.seek(to: at(time)) {
    case .success: .ok
    case .failure(let error): error.code
    }
  }

  private func time(_ offset: Int64) -> MediaTime { MediaTime(milliseconds: start + offset) }

  /// The time `ms` UTC milliseconds name (the tables are written in the seed's unit).
  private func at(_ ms: Int64) -> MediaTime { MediaTime(milliseconds: ms) }

  /// `[from, to)` in UTC ms.
  private func span(_ from: Int64, _ to: Int64) -> MediaRange {
    MediaRange(startMilliseconds: from, endMilliseconds: to)
  }

  private func gap(_ from: Int64, _ to: Int64, _ reason: GapReason) -> RecordingGap {
    RecordingGap(
      range: MediaRange(startMilliseconds: start + from, endMilliseconds: start + to), tracks: [], reasons: [reason])
  }

  @Test(
    "gaps found late of a track judged from now on: each crossed once by its output, as the position reaches its end or its copy"
  )
  func lateGapsOfATakeOver() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    _ = rules.presented(time(0), by: v, video: true, candidates: [v, a], generation: g)
    let (early, inOrder, seekedOver) = (
      gap(1_000, 2_000, .noRecording), gap(3_000, 4_000, .noRecording), gap(8_000, 9_000, .noRecording)
    )
    rules.expect(late: [early, inOrder, seekedOver], of: v)
    // The sound, joined while the picture drives: its own stretch is not the play's to report.
    rules.expect(late: [gap(500, 1_500, .trackUnavailable)], of: a)
    // A frame before the first end reports nothing; the first frame at or after it reports the gap.
    #expect(rules.presented(time(960), by: v, video: true, candidates: [v, a], generation: g).gaps.isEmpty)
    #expect(rules.presented(time(2_000), by: v, video: true, candidates: [v, a], generation: g).gaps == [early])
    // Its copy, crossed later behind the position: not again.
    #expect(rules.crossed(early, by: v, candidates: [v, a], generation: g).isEmpty)
    // A copy that comes in order, before the position reached its end: reported then, and not again.
    #expect(rules.crossed(inOrder, by: v, candidates: [v, a], generation: g) == [inOrder])
    #expect(rules.presented(time(4_000), by: v, video: true, candidates: [v, a], generation: g).gaps.isEmpty)
    // A seek drops what was expected of the old position.
    #expect(seekCode(&rules, start + 5_000) == .ok)
    #expect(
      rules.presented(time(9_000), by: v, video: true, candidates: [v, a], generation: rules.generation).gaps.isEmpty)
  }

  @Test("a late gap's copy crossed before the output's first frame, then that frame past it: reported once")
  func aLateGapsCopyFirst() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    // The sound drives (the picture, joining, has presented nothing; the sound 0.6 s).
    for offset in stride(from: Int64(0), through: 640, by: 64) {
      _ = rules.presented(time(offset), by: a, video: false, candidates: [v, a], generation: g)
    }
    let hole = gap(1_000, 2_000, .noRecording)
    rules.expect(late: [hole], of: v)
    // The detector's copy reaches the picture's branch first (its gate forwards events while it hands
    // on the history); then the picture's first frame, past the gap.
    #expect(rules.crossed(hole, by: v, candidates: [v, a], generation: g).isEmpty)
    let first = rules.presented(time(2_000), by: v, video: true, candidates: [v, a], generation: g)
    #expect(first.gaps == [hole])
  }

  @Test("an output leaving hands its late gaps to a heir of its track, or nobody crosses them")
  func lateGapsOfALeavingOutput() throws {
    for handedOn in [true, false] {
      var rules = ReplayStateMachine()
      let (v, _) = rules.bind(video)
      let (w, _) = rules.bind(video)
      #expect(rules.play(span(start, start + 60_000), from: nil, token: "t") == (.ok, false))
      let g = rules.generation
      _ = rules.presented(time(0), by: v, video: true, candidates: [v], generation: g)
      let hole = gap(1_000, 2_000, .noRecording)
      rules.expect(late: [hole], of: v)
      // `v` leaves before the gap's end; `w`, of the same track, drives on.
      rules.handOnLateGaps(of: v, to: handedOn ? w : nil)
      _ = rules.presented(time(960), by: w, video: true, candidates: [w], generation: g)
      let past = rules.presented(time(2_000), by: w, video: true, candidates: [w], generation: g)
      #expect(past.gaps == (handedOn ? [hole] : []))
      #expect(rules.lateGaps.isEmpty)
    }
  }

  private func restart(_ rules: inout ReplayStateMachine) -> Bool { rules.restart() }

  @Test("a restart goes on after each output's own last frame, and reports no gap it reported or held before")
  func aRestartGoesOnAfterWhatWasPresented() throws {
    var (rules, v, a) = playing()
    var g = rules.generation
    // Before the picture's first frame the sound played 100 ms ahead: a restart goes on after it.
    _ = rules.presented(time(100), by: a, video: false, candidates: [v, a], generation: g)
    #expect(restart(&rules))
    g = rules.generation
    let early = try #require(rules.start(restarting: true, recording: false))
    #expect(
      early.presentFrom == time(0)
        && early.resumesAfter == [a: time(100).advanced(by: .microseconds(1), notAfter: time(60_000))])
    // The picture at 2.16 s drives; the sound played 2.176 s.
    _ = rules.presented(time(2_160), by: v, video: true, candidates: [v, a], generation: g)
    _ = rules.presented(time(2_176), by: a, video: false, candidates: [v, a], generation: g)
    let hole = gap(2_160, 3_000, .noRecording)
    #expect(rules.crossed(hole, by: v, candidates: [v, a], generation: g) == [hole])
    // A failed object after it is held until media plays (R73).
    let failed = gap(3_000, 4_000, .downloadFailed)
    #expect(rules.crossed(failed, by: v, candidates: [v, a], generation: g).isEmpty)
    #expect(restart(&rules))
    g = rules.generation
    let again = try #require(rules.start(restarting: true, recording: false))
    #expect(again.presentFrom == time(2_160).advanced(by: .microseconds(1), notAfter: time(60_000)))
    #expect(again.resumesAfter == [a: time(2_176).advanced(by: .microseconds(1), notAfter: time(60_000))])
    // The rebuilt graph crosses the hole again (clamped at its start) and the failed object: nothing new.
    #expect(rules.crossed(gap(2_161, 3_000, .noRecording), by: v, candidates: [v, a], generation: g).isEmpty)
    #expect(rules.crossed(failed, by: v, candidates: [v, a], generation: g).isEmpty)
    #expect(rules.presented(time(4_000), by: v, video: true, candidates: [v, a], generation: g).gaps == [failed])
    // Another stretch is reported.
    let next = gap(5_000, 6_000, .noRecording)
    #expect(rules.crossed(next, by: v, candidates: [v, a], generation: g) == [next])
  }

  @Test func R11_R12_R13_R14_refusedPlaysChangeNothing() throws {
    var rules = ReplayStateMachine()
    #expect(rules.play(span(start, start + 1000), token: "t") == (.notBound, false))
    let (v, _) = rules.bind(video)
    #expect(rules.play(span(start, start + 60_000), token: "t") == (.ok, false))
    _ = rules.presented(time(0), by: v, video: true, candidates: [v], generation: rules.generation)
    rules.speed = .x4
    _ = rules.setPaused(true)
    let before = (rules.generation, rules.playNumber, rules.position, rules.play, rules.paused, rules.speed)
    let refused: [(Int64, Int64, Int64?, TiErrorCode)] = [
      (start, start, nil, .invalidArgument),  // R11: empty
      (start + 10, start, nil, .invalidArgument),  // R11: reversed
      (start, start + 1000, start + 1000, .invalidArgument),  // R12: initial at the end
      (start, start + 1000, start - 1, .invalidArgument),  // R12: initial before the start
    ]  // (ms no time can hold are refused where they become times: the facade, ReplayObjectRuleTests)
    for (from, to, initial, code) in refused {
      #expect(rules.play(span(from, to), from: initial.map(at), token: "u").code == code, "\(from) \(to)")
      let after = (rules.generation, rules.playNumber, rules.position, rules.play, rules.paused, rules.speed)
      #expect(after == before, "R14: \(from) \(to) \(initial as Any)")
    }
    #expect(rules.active)
    // R13 with a play going on: every output unbound (the play stays, frozen: R47), a play is refused
    // with notBound and leaves it as it was.
    let stillActive = rules.unbind(v)
    #expect(stillActive)
    let unbound = (rules.generation, rules.playNumber, rules.position, rules.play, rules.paused, rules.speed)
    #expect(rules.play(span(start, start + 1000), token: "u") == (.notBound, false))
    let after = (rules.generation, rules.playNumber, rules.position, rules.play, rules.paused, rules.speed)
    #expect(after == unbound, "R13, R14: notBound after a play")
    #expect(rules.active && rules.play?.token == "t")
  }

  @Test func R19_R20_aNewPlayKeepsOutputsAndSpeedAndStartsUnpausedWithoutAPosition() throws {
    var (rules, v, a) = playing()
    rules.speed = .x0_25
    _ = rules.presented(time(0), by: v, video: true, candidates: [v, a], generation: rules.generation)
    _ = rules.setPaused(true)
    let number = rules.playNumber
    #expect(rules.play(span(start + 5000, start + 9000), from: at(start + 6000), token: "u") == (.ok, false))
    #expect(rules.playNumber == number + 1)  // R70: the old play's callbacks are dropped
    #expect(rules.outputs.map(\.id) == [v, a])
    #expect(rules.speed == .x0_25)
    #expect(!rules.paused && rules.active)
    #expect(rules.position == nil)
    #expect(rules.start(restarting: false, recording: false)?.range.start == MediaTime(milliseconds: start + 6000))
  }

  @Test func R21_aPlayOverTenDaysIsAcceptedAndMustFail() throws {
    var rules = ReplayStateMachine()
    _ = rules.bind(video)
    #expect(rules.play(span(start, start + 864_000_000), token: "t") == (.ok, false))
    #expect(rules.play(span(start, start + 864_000_001), token: "t") == (.ok, true))
    let number = rules.playNumber
    // A seek or a binding change before the failure is delivered reads nothing, and the failure still
    // ends the play (it is matched by play, not by graph generation).
    #expect(try rules.seek(to: at(start + 5000)).get() == nil)
    _ = rules.bind(audio)
    let restarts = rules.restart()
    #expect(restarts)
    #expect(rules.start(restarting: false, recording: true) == nil)
    let failed = rules.fail(play: number)
    #expect(failed)
    #expect(!rules.active)
    let again = rules.fail(play: number)
    #expect(!again)
  }

  @Test func R26_R28_R30_commandsWithoutAnActivePlay() throws {
    var rules = ReplayStateMachine()
    let paused = rules.setPaused(true)
    #expect(!paused)
    #expect(seekCode(&rules, start) == .notStarted)
    _ = rules.bind(video)
    _ = rules.play(span(start, start + 1000), token: "t")
    rules.stop()
    let resumed = rules.setPaused(false)
    #expect(!resumed)
    // R30: out of range as well: still notStarted.
    #expect(seekCode(&rules, start - 5) == .notStarted)
  }

  @Test func R29_R32_seeksOutOfRangeAreRefusedAndTheLastSeekWins() throws {
    var (rules, v, a) = playing()
    let generation = rules.generation
    #expect(seekCode(&rules, start + 60_000) == .invalidArgument)
    #expect(rules.generation == generation)  // nothing changed
    #expect(try rules.seek(to: at(start + 10_000)).get() == nil)
    #expect(try rules.seek(to: at(start + 20_000)).get() == time(10_000))  // superseded, reported
    #expect(try rules.seek(to: at(start + 30_000)).get() == time(20_000))
    // The graph of an older generation presents nothing; the last target's does.
    let stale = rules.presented(time(10_000), by: v, video: true, candidates: [v, a], generation: generation)
    #expect(!stale.accepted && rules.position == nil)
    let taken = rules.presented(time(30_000), by: v, video: true, candidates: [v, a], generation: rules.generation)
    #expect(taken.accepted && taken.report == time(30_000))
    // A seek once the target was presented supersedes nothing.
    #expect(try rules.seek(to: at(start + 40_000)).get() == nil)
  }

  @Test func R31_R35_seekKeepsThePauseAndShowsTheTarget() throws {
    var (rules, v, a) = playing()
    _ = rules.setPaused(true)
    _ = try? rules.seek(to: at(start + 7000)).get()
    #expect(rules.paused && rules.active)
    let plan = rules.start(restarting: false, recording: false)
    #expect(plan?.paused == true && plan?.showsFirstFrameWhilePaused == true)
    let shown = rules.presented(time(7000), by: v, video: true, candidates: [v, a], generation: rules.generation)
    #expect(shown.report == time(7000) && rules.position == time(7000))
  }

  @Test func R53_timeIsReportedAtMostEvery100MillisecondsOfMediaAndAtOnceAfterAGap() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    // 25 fps: every 40 ms; reported at 0, then the first frame ≥ 100 ms after the last report.
    var reported: [Int64] = []
    for frame in 0..<10 {
      let verdict = rules.presented(time(Int64(frame) * 40), by: v, video: true, candidates: [v, a], generation: g)
      if let report = verdict.report { reported.append(report.milliseconds - start) }
    }
    #expect(reported == [0, 120, 240, 360])
    // A hole crossed: the next frame is reported at once.
    #expect(rules.crossed(gap(400, 1000, .noRecording), by: v, candidates: [v, a], generation: g).count == 1)
    #expect(rules.presented(time(1000), by: v, video: true, candidates: [v, a], generation: g).report == time(1000))
    #expect(rules.presented(time(1040), by: v, video: true, candidates: [v, a], generation: g).report == nil)
    // Nobody listening: nothing is spent, and a handler set later hears the next frame at once (R52).
    let unheard = rules.presented(
      time(1100), by: v, video: true, candidates: [v, a], generation: g, listening: false)
    #expect(unheard.report == nil && rules.position == time(1100))
    #expect(rules.presented(time(1140), by: v, video: true, candidates: [v, a], generation: g).report == time(1140))
  }

  @Test func R53_aShortGapAndABackwardSeekAreReportedAtOnce() throws {
    var (rules, v, a) = playing()
    var g = rules.generation
    for frame in 0..<10 {
      _ = rules.presented(time(Int64(frame) * 40), by: v, video: true, candidates: [v, a], generation: g)
    }
    // Reported last at 360: a 40 ms hole crossed 20 ms later, its end reported though only 60 ms after.
    #expect(rules.crossed(gap(380, 420, .noRecording), by: v, candidates: [v, a], generation: g).count == 1)
    #expect(rules.presented(time(420), by: v, video: true, candidates: [v, a], generation: g).report == time(420))
    #expect(rules.presented(time(460), by: v, video: true, candidates: [v, a], generation: g).report == nil)
    // A seek back: the target's frame is reported at once though it lies before the last report.
    #expect(seekCode(&rules, start + 100) == .ok)
    g = rules.generation
    #expect(rules.presented(time(100), by: v, video: true, candidates: [v, a], generation: g).report == time(100))
    #expect(rules.presented(time(140), by: v, video: true, candidates: [v, a], generation: g).report == nil)
    // And a seek forward by less than 100 ms of media, too.
    #expect(seekCode(&rules, start + 180) == .ok)
    g = rules.generation
    #expect(rules.presented(time(180), by: v, video: true, candidates: [v, a], generation: g).report == time(180))
  }

  @Test func R73_aFailedRecordingIsAGapOnlyWhenMediaAfterItPlays() throws {
    let cases: [(GapReason, TiErrorCode)] = [
      (.notFound, .recordingNotFound), (.downloadFailed, .recordingDownloadFailed),
      (.integrityFailed, .recordingUnreadable), (.decryptionFailed, .recordingUnreadable),
      (.mediaUnreadable, .recordingUnreadable), (.unsupportedMedia, .unsupportedFormat),
    ]
    for (reason, code) in cases {
      // Media after it plays: reported as a gap, with the hole held behind it.
      var (rules, v, a) = playing()
      let g = rules.generation
      _ = rules.presented(time(0), by: v, video: true, candidates: [v, a], generation: g)
      #expect(rules.crossed(gap(3000, 6000, reason), by: v, candidates: [v, a], generation: g).isEmpty)
      #expect(rules.crossed(gap(6000, 9000, .noRecording), by: v, candidates: [v, a], generation: g).isEmpty)
      let after = rules.presented(time(9000), by: v, video: true, candidates: [v, a], generation: g)
      #expect(after.gaps == [gap(3000, 6000, reason), gap(6000, 9000, .noRecording)], "\(reason)")
      #expect(after.report == time(9000))
      guard case .completed = rules.completed(generation: g, candidates: [v, a]) else {
        Issue.record("\(reason): media played after it, the play completes")
        continue
      }
      // Nothing after it: the play fails with the reason's code.
      var (ending, v2, a2) = playing()
      let g2 = ending.generation
      _ = ending.presented(time(0), by: v2, video: true, candidates: [v2, a2], generation: g2)
      _ = ending.crossed(gap(3000, 60_000, reason), by: v2, candidates: [v2, a2], generation: g2)
      guard case .failed(let error, _) = ending.completed(generation: g2, candidates: [v2, a2]) else {
        Issue.record("\(reason): nothing played after it, the play fails")
        continue
      }
      #expect(error.code == code, "\(reason)")
      #expect(!ending.active)
    }
    // Holes, missing keyframes and channels are never errors.
    for reason in [GapReason.noRecording, .noKeyFrame, .trackUnavailable] {
      #expect(ReplayStateMachine.failure(of: gap(0, 1, reason)) == nil)
    }
  }

  @Test func O40_theAudioTakesThePositionWhenTheVideoPresentsNothingFor500Milliseconds() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    // A leading hole the audio crosses before its first frame (the video is the driver): held for it.
    #expect(rules.crossed(gap(0, 100, .noRecording), by: a, candidates: [v, a], generation: g).isEmpty)
    // Audio frames of 20 ms: before 500 ms of audio the video keeps the position (nothing moves it).
    for offset in stride(from: Int64(100), to: 600, by: 20) {
      let verdict = rules.presented(time(offset), by: a, video: false, candidates: [v, a], generation: g)
      #expect(verdict.accepted && !verdict.movesPosition, "\(offset)")
    }
    #expect(rules.driver(of: [v, a]) == v && rules.position == nil)
    // At 500 ms of audio it takes over, and reports the hole it crossed.
    let takeover = rules.presented(time(600), by: a, video: false, candidates: [v, a], generation: g)
    #expect(takeover.movesPosition && takeover.report == time(600))
    #expect(takeover.gaps == [gap(0, 100, .noRecording)])
    #expect(rules.driver(of: [v, a]) == a)
    // The channel without media fails its output once the position reaches where it was noticed.
    rules.channelMissing(video, noticedAt: time(700), generation: g)
    #expect(rules.presented(time(680), by: a, video: false, candidates: [v, a], generation: g).mismatched.isEmpty)
    #expect(rules.presented(time(700), by: a, video: false, candidates: [v, a], generation: g).mismatched == [v])
    #expect(!rules.presented(time(700), by: v, video: true, candidates: [v, a], generation: g).accepted)
  }

  @Test("one sound steers the clock: the audio candidate, or once it failed the first other sound that presents")
  func theSoundThatSteers() throws {
    var rules = ReplayStateMachine()
    let (v, _) = rules.bind(video)
    // The first sound is of a channel without media; a second one, and a third, of channel 2.
    let (a1, _) = rules.bind(TrackID(.audio, channel: 5))
    let (a2, _) = rules.bind(TrackID(.audio, channel: 2))
    let (a3, _) = rules.bind(TrackID(.audio, channel: 2))
    #expect(rules.play(span(start, start + 60_000), from: nil, token: "t") == (.ok, false))
    let g = rules.generation
    let candidates = [v, a1]
    _ = rules.presented(time(0), by: v, video: true, candidates: candidates, generation: g)
    // Before the candidate fails, it steers (another sound does not; nor does a picture).
    #expect(rules.steeringSound(of: candidates) == a1)
    #expect(!rules.presented(time(0), by: a2, video: false, candidates: candidates, generation: g).steersClock)
    #expect(!rules.presented(time(20), by: v, video: true, candidates: candidates, generation: g).steersClock)
    // Its channel carries nothing: it fails once the position reaches where that was noticed.
    rules.channelMissing(TrackID(.audio, channel: 5), noticedAt: time(40), generation: g)
    #expect(rules.presented(time(40), by: v, video: true, candidates: candidates, generation: g).mismatched == [a1])
    // None steers until another sound presents; the first that does steers in its stead, the next not.
    #expect(rules.steeringSound(of: candidates) == nil)
    #expect(rules.presented(time(40), by: a2, video: false, candidates: candidates, generation: g).steersClock)
    #expect(rules.steeringSound(of: candidates) == a2)
    #expect(!rules.presented(time(40), by: a3, video: false, candidates: candidates, generation: g).steersClock)
    // After a seek (the failed sound stays failed in the play) nothing has presented yet: the first sound
    // that does steers.
    _ = rules.seek(to: time(30_000))
    let sought = rules.generation
    #expect(rules.steeringSound(of: candidates) == nil)
    #expect(rules.presented(time(30_000), by: a3, video: false, candidates: candidates, generation: sought).steersClock)
    // It goes on steering when the sound bound before it presents too (one device steers, not each in turn).
    let second = rules.presented(time(30_000), by: a2, video: false, candidates: candidates, generation: sought)
    #expect(!second.steersClock)
    #expect(rules.presented(time(30_020), by: a3, video: false, candidates: candidates, generation: sought).steersClock)
    // It leaves: the next sound to present steers.
    _ = rules.unbind(a3)
    #expect(rules.steeringSound(of: candidates) == nil)
    #expect(rules.presented(time(30_040), by: a2, video: false, candidates: candidates, generation: sought).steersClock)
    // No sound among the candidates (a picture alone): none steers.
    #expect(rules.steeringSound(of: [v]) == nil)
  }

  @Test func O8_R63_R66_outputsThatDrainedCompleteWithThePlay() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    _ = rules.presented(time(59_960), by: v, video: true, candidates: [v, a], generation: g)
    rules.drained(v, generation: g)
    rules.drained(a, generation: g - 1)  // an older graph's: ignored
    guard case .completed(let done) = rules.completed(generation: g, candidates: [v, a]) else {
      Issue.record("the play completes")
      return
    }
    #expect(done.completedOutputs == [v])
    #expect(done.reportsEnd && done.end == time(60_000))
    #expect(rules.position == time(60_000) && !rules.active)  // R49
    // Exactly once (R63, R65): a second end of stream of the same generation is nothing.
    #expect(rules.completed(generation: g, candidates: [v, a]) == .ignored)
    let failedAfter = rules.fail(generation: g)
    #expect(!failedAfter)
  }

  @Test func R44_R45_R46_stopEndsThePlayWithoutCallbacksAndIsIdempotent() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    _ = rules.presented(time(0), by: v, video: true, candidates: [v, a], generation: g)
    rules.speed = .x2
    rules.stop()
    #expect(!rules.active && rules.position == nil)
    #expect(rules.outputs.count == 2 && rules.speed == .x2)
    // The stopped play's graph neither completes nor fails it.
    #expect(rules.completed(generation: g, candidates: [v, a]) == .ignored)
    let failedAfterStop = rules.fail(generation: g)
    #expect(!failedAfterStop)
    rules.stop()
    #expect(!rules.active)
  }

  @Test func R47_R48_outputsBoundDuringAPlayJoinAtThePositionAndRestartTheGraph() throws {
    var (rules, v, a) = playing()
    let g = rules.generation
    _ = rules.presented(time(2000), by: v, video: true, candidates: [v, a], generation: g)
    let (late, restart) = rules.bind(TrackID(.video, channel: 2))
    #expect(restart)
    #expect(rules.restart() && rules.generation == g + 1)
    let plan = rules.start(restarting: true, recording: false)
    // Restarting goes on just after the last frame (a microsecond: nothing lost to rounding); the new
    // output joins at the position.
    #expect(plan?.presentFrom == MediaTime(microseconds: time(2000).microseconds + 1))
    #expect(plan?.outputs.first { $0.id == late }?.joinsAt == time(2000))
    #expect(plan?.showsFirstFrameWhilePaused == false)
    // Every output unbound and no recorder: nothing to start, the play stays active.
    for id in [v, a, late] {
      let restarts = rules.unbind(id)
      #expect(restarts)
    }
    #expect(rules.start(restarting: true, recording: false) == nil)
    #expect(rules.active && rules.position == time(2000))
    #expect(rules.start(restarting: true, recording: true) != nil)
  }
}
