import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// Notes the clock instant at which each frame reaches it.
final class InstantSink: Node {
  typealias Input = DecodedFrame
  typealias Output = Never
  let name = "InstantSink"
  /// (media µs, clock µs) of each frame, in order.
  private(set) var frames: [(media: Int64, at: Int64)] = []
  private(set) var finishedAt: Int64?

  func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    frames.append((input.time.microseconds, context.now.microseconds))
  }

  func finish(context: NodeContext<Never>) throws { finishedAt = context.now.microseconds }
}

/// The Pacer alone, on a manual executor and a virtual clock, with frames that share one tiny picture
/// (no codec: an hour of frames costs little).
@Suite("Pacer")
struct PacerTests {
  let picture: DecodedFrame

  init() throws {
    picture = try SyntheticFrames.picture(time: MediaTime(microseconds: 0), width: 2, height: 2) { _, _, _ in 128 }
  }

  /// A 40 ms frame at `ms` milliseconds.
  func frame(_ ms: Int64) -> DecodedFrame {
    DecodedFrame(
      track: picture.track, time: MediaTime(milliseconds: ms), duration: .microseconds(40_000), frame: picture.frame)
  }

  /// Runs `pipeline` to its end, moving the clock from timer to timer.
  func runToEnd(_ executor: ManualExecutor, _ clock: VirtualClock) {
    while true {
      executor.runUntilIdle()
      guard clock.crank() else { break }
    }
  }

  @Test func anHourAt1xPresentsEveryFrameOnceAtItsTimeAndEndsOnTime() throws {
    let count = 90_000  // 25 fps
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let pipeline = Pipeline(executor: executor, clock: clock)
    let source = ScriptedSource<DecodedFrame>(name: "frames", (0..<count).map { .item(frame(Int64($0) * 40)) })
    let pacer = Pacer()
    let sink = InstantSink()
    pipeline.connect(source, to: pacer, limits: EdgeLimits(items: 4))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: 2))
    try pipeline.start()
    runToEnd(executor, clock)
    #expect(sink.frames.count == count)
    var exact = true
    for (index, presented) in sink.frames.enumerated() {
      exact = exact && presented.media == Int64(index) * 40_000 && presented.at == presented.media
    }
    #expect(exact)
    // The last frame lasts its 40 ms before the end goes on: the hour ends at 3600 s of clock.
    #expect(sink.finishedAt == 3_600_000_000)
    #expect(pacer.statistics.presented.load(ordering: .relaxed) == count)
    #expect(pacer.statistics.dropped.load(ordering: .relaxed) == 0)
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test("a clock set back while a frame waits (an audio master clock catching up with late sound): it waits again")
  func aTimerThatFiresEarlyOnASetBackClockWaitsAgain() throws {
    let executor = ManualExecutor()
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    let pipeline = Pipeline(executor: executor, clock: clock)
    let source = ScriptedSource<DecodedFrame>(name: "frames", [.item(frame(0)), .item(frame(40)), .item(frame(80))])
    let pacer = Pacer()
    let sink = InstantSink()
    pipeline.connect(source, to: pacer, limits: EdgeLimits(items: 4))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: 2))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0])
    // The sound is found 60 ms behind: the clock stands 60 ms. The timer for 40 ms, set before, fires at
    // 40 ms of the base clock, when the play's clock is still at 0: the frame waits until it is at 40.
    clock.follow(latency: .microseconds(60_000), meant: .zero, frame: .microseconds(64_000))
    base.advance(to: ClockInstant(microseconds: 99_000))
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0])
    base.advance(to: ClockInstant(microseconds: 100_000))
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0, 40_000])
    #expect(sink.frames.last?.at == 40_000)
    #expect(pacer.statistics.late.load(ordering: .relaxed) == 0)
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test("a clock set ahead at once while a frame waits (the sound found sooner than meant): the frame is shown then")
  func aClockSetAheadWakesTheWaitingFrame() throws {
    let executor = ManualExecutor()
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    let timeline = PlaybackTimeline()
    let pipeline = Pipeline(executor: executor, clock: clock)
    let source = ScriptedSource<DecodedFrame>(name: "frames", [.item(frame(0)), .item(frame(40)), .item(frame(80))])
    let pacer = Pacer(timeline: timeline)
    let sink = InstantSink()
    pipeline.connect(source, to: pacer, limits: EdgeLimits(items: 4))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: 2))
    try pipeline.start()
    executor.runUntilIdle()
    // The sound is found 60 ms behind: the clock stands, and the frame of 40 ms waits until 100 ms of the
    // base clock.
    clock.follow(latency: .microseconds(60_000), meant: .zero, frame: .microseconds(64_000))
    base.advance(to: ClockInstant(microseconds: 45_000))
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0])
    // At 45 ms the speaker says the sound meant for 100 ms from now is heard in 40: the clock is set 60 ms
    // ahead at once, and the frame of 40 ms is due; it is shown now, not at its timer's 100 ms.
    let speaker = LatencySpeaker(latency: .microseconds(40_000))
    let sound = DecodedFrame(
      track: TrackID(.audio, channel: 1), time: MediaTime(milliseconds: 85), duration: .microseconds(64_000),
      frame: picture.frame)
    speaker.play(sound, volume: 100, in: timeline, following: clock)
    #expect(clock.correction == .zero)
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0, 40_000])
    #expect(sink.frames.last?.at == 45_000)
    pipeline.stop()
    executor.runUntilIdle()
  }

  @Test func lateFramesAtFastSpeedsAreDroppedCountedAndAskUpstreamForKeyframesOnlyUntilCaughtUp() throws {
    let pacer = Pacer(rate: PlaybackRate(numerator: 8, denominator: 1)!)
    let harness = try NodeHarness(pacer)
    harness.push(frame(0))
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 1)
    // The decoder took a second to deliver anything more: 8 s of media at 8×. Frames whose time has
    // passed by more than their scaled duration (5 ms) are dropped.
    harness.advance(by: .seconds(1))
    harness.push(contentsOf: [frame(40), frame(80)])
    harness.runUntilIdle()
    #expect(pacer.statistics.dropped.load(ordering: .relaxed) == 2)
    #expect(harness.upstreamEvents.isEmpty)
    harness.push(frame(120))
    harness.runUntilIdle()
    #expect(pacer.statistics.dropped.load(ordering: .relaxed) == 3)
    // The third drop in a row asks for keyframes only, with how late that frame was (1 s − 120 ms / 8).
    #expect(harness.upstreamEvents.map(\.description) == ["qualityOfService(essentialOnly, late 0.985 seconds)"])
    // Late by less than its scaled duration: still presented, at once; decoding is whole again.
    harness.push(frame(7_976))
    harness.runUntilIdle()
    #expect(harness.outputItems.map(\.time) == [MediaTime(milliseconds: 0), MediaTime(milliseconds: 7_976)])
    #expect(harness.upstreamEvents.map(\.description).last == "qualityOfService(everything)")
    #expect(harness.upstreamEvents.count == 2)
    // Early: held until its instant (9 s of media = 1.125 s of clock).
    harness.push(frame(9_000))
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 2)
    harness.advance(by: .milliseconds(124))
    #expect(harness.outputItems.count == 2)
    harness.advance(by: .milliseconds(1))
    #expect(harness.outputItems.count == 3)
    #expect(pacer.statistics.presented.load(ordering: .relaxed) == 3)
  }

  @Test func aboveNormalSpeedTheClockStartsItsLatencyAfterTheFirstPictureWhichIsShownAtOnce() throws {
    let eight = PlaybackRate(numerator: 8, denominator: 1)!
    // The decoder's second frame 12 ms after its first: at 8× a frame lasts 5 ms.
    func play(startLatency: MediaDuration, rate: PlaybackRate) throws -> (at: [Int64], dropped: Int, late: Int) {
      let pacer = Pacer(rate: rate, timeline: PlaybackTimeline(rate: rate, startLatency: startLatency))
      let harness = try NodeHarness(pacer)
      var at: [Int64] = []
      harness.push(frame(0))
      harness.runUntilIdle()
      at += harness.outputItems.map { _ in 0 }
      for step in 1...40 {
        if step == 12 { harness.push(frame(40)) }
        harness.advance(by: .milliseconds(1))
        if harness.outputItems.count > at.count { at.append(Int64(step)) }
      }
      return (at, pacer.statistics.dropped.load(ordering: .relaxed), pacer.statistics.late.load(ordering: .relaxed))
    }
    // Without a latency the second frame is 7 ms past its instant (5 ms after the first picture): dropped.
    let bare = try play(startLatency: .zero, rate: eight)
    #expect(bare.at == [0] && bare.dropped == 1)
    // With 20 ms: the first picture at once, the clock from 20 ms, the second frame on time at 25 ms.
    let started = try play(startLatency: .microseconds(20_000), rate: eight)
    #expect(started.at == [0, 25] && started.dropped == 0 && started.late == 0, "\(started)")
    // At 1× the clock starts at the first picture whatever the latency (the sound must not trail it).
    let normal = try play(startLatency: .microseconds(20_000), rate: .normal)
    #expect(normal.at == [0, 40] && normal.dropped == 0 && normal.late == 0, "\(normal)")
  }

  @Test("a pacer that joined without prerolling prerolls after a seek: the anchor waits for its first frame")
  func aJoinedPacerPrerollsAfterASeek() throws {
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let pipeline = Pipeline(executor: executor, clock: clock)
    let timeline = PlaybackTimeline()
    let (first, joined) = (
      ScriptedSource<DecodedFrame>(name: "first", endsAfterScript: false),
      ScriptedSource<DecodedFrame>(name: "joined", endsAfterScript: false)
    )
    let (firstSink, joinedSink) = (InstantSink(), InstantSink())
    let firstPacer = Pacer(name: "firstPacer", timeline: timeline)
    let joinedPacer = Pacer(name: "joinedPacer", timeline: timeline, prerolls: false, prerollsAfterSeek: true)
    pipeline.connect(first, to: firstPacer)
    pipeline.connect(firstPacer, to: firstSink)
    pipeline.connect(joined, to: joinedPacer)
    pipeline.connect(joinedPacer, to: joinedSink)
    try pipeline.start()
    // At first the joined pacer holds nothing back: the first frame is shown alone, at once.
    first.append([.item(frame(1_000))])
    executor.runUntilIdle()
    #expect(firstSink.frames.map(\.media) == [1_000_000])
    pipeline.flush(seekingTo: MediaTime(milliseconds: 5_000))
    first.append([.item(frame(5_040))])
    executor.runUntilIdle()
    // After the seek it is one of the play's pacers: nothing is shown before its first frame is offered.
    #expect(firstSink.frames.count == 1)
    joined.append([.item(frame(5_000))])
    executor.runUntilIdle()
    runToEnd(executor, clock)
    #expect(joinedSink.frames.first?.media == 5_000_000)
    // Anchored at the earliest offer: the first output's frame comes 40 ms after the joined one's.
    let joinedAt = try #require(joinedSink.frames.first?.at)
    #expect(firstSink.frames.last.map { $0.at - joinedAt } == 40_000)
  }

  @Test("a frame held for its instant when a pause comes, shown at once then: the next is taken on resume")
  func aHeldFrameShownAtThePause() throws {
    // Another track anchored the shared clock at 0: the first frame, of 500 ms, waits for its instant.
    let timeline = PlaybackTimeline()
    _ = timeline.instant(of: MediaTime(milliseconds: 0), track: TrackID(.audio, channel: 1), now: .zero)
    let pacer = Pacer(showsFirstFrameWhilePaused: true, timeline: timeline, prerolls: false)
    let harness = try NodeHarness(pacer)
    harness.push(frame(500))
    harness.runUntilIdle()
    #expect(harness.outputItems.isEmpty)
    harness.advance(by: .milliseconds(100))
    pacer.pause()
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 1)
    harness.push(contentsOf: [frame(540), frame(580)])
    harness.runUntilIdle()
    harness.advance(by: .seconds(1))
    #expect(harness.outputItems.count == 1)
    pacer.resume()
    harness.runUntilIdle()
    harness.advance(by: .seconds(1))
    // Before, the input stayed suspended from the hold: nothing came after the first frame.
    #expect(harness.outputItems.map(\.time.microseconds) == [500_000, 540_000, 580_000])
  }

  @Test func atNormalSpeedALateFrameIsPresentedNotDropped() throws {
    let pacer = Pacer()
    let harness = try NodeHarness(pacer)
    harness.push(frame(0))
    harness.runUntilIdle()
    harness.advance(by: .seconds(1))
    harness.push(contentsOf: [frame(40), frame(80)])
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 3)
    #expect(pacer.statistics.dropped.load(ordering: .relaxed) == 0)
    // Both came a second after their time: shown, and counted as late.
    #expect(pacer.statistics.late.load(ordering: .relaxed) == 2)
  }

  /// A manual executor that the virtual clock does not run when it fires a timer: the job waits until
  /// the test runs it, as a busy thread gets to a timer late.
  final class BusyExecutor: PipelineExecutor {
    let inner = ManualExecutor()
    func execute(_ job: @escaping @Sendable () -> Void) { inner.execute(job) }
    var isIdle: Bool { inner.isIdle }
    func setIdleHandler(_ handler: (@Sendable () -> Void)?) { inner.setIdleHandler(handler) }
    func runUntilIdle() { inner.runUntilIdle() }
    func runHere(_ body: () -> Void) -> Bool { inner.runHere(body) }
  }

  @Test func aFrameIsLateOnlyWhenShownPastItsDurationAfterItsTime() throws {
    let executor = BusyExecutor()
    let clock = VirtualClock()
    let pipeline = Pipeline(executor: executor, clock: clock)
    let source = ScriptedSource<DecodedFrame>(name: "frames", (0..<4).map { .item(frame(Int64($0) * 40)) })
    let pacer = Pacer()
    let sink = InstantSink()
    pipeline.connect(source, to: pacer, limits: EdgeLimits(items: 4))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: 4))
    try pipeline.start()
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0])
    // The timer of the frame at 40 ms fires, but its executor gets to it only at 79 ms: within its
    // 40 ms, on time.
    clock.advance(to: ClockInstant(microseconds: 79_000))
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0, 40_000])
    #expect(pacer.statistics.late.load(ordering: .relaxed) == 0)
    // The one at 80 ms is reached at 121 ms: 41 ms after its time, past its duration — late; and the
    // one at 120 ms, due by then, is shown at once and on time.
    clock.advance(to: ClockInstant(microseconds: 121_000))
    executor.runUntilIdle()
    #expect(sink.frames.map(\.media) == [0, 40_000, 80_000, 120_000])
    #expect(pacer.statistics.late.load(ordering: .relaxed) == 1)
    #expect(pacer.statistics.dropped.load(ordering: .relaxed) == 0)
    pipeline.stop()
    executor.runUntilIdle()
  }
}

/// A speaker that plays nothing and says it holds `latency` of sound.
final class LatencySpeaker: AudioDevice {
  let latency: MediaDuration?

  init(latency: MediaDuration) { self.latency = latency }

  func play(_ frame: DecodedFrame, volume: Int) {}
}
