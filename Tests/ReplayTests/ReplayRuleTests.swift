import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// Replay on a manual executor and a virtual clock: frame-exact pacing and the rules of rules.md
/// group R that the Replay engine carries (the SDK object's lifecycle rules come with the facade).
@Suite struct ReplayRuleTests {
  @Test func atNormalSpeedEveryFrameIsPresentedOnceAtItsTime() throws {
    let harness = try ReplayHarness(seconds: 6)
    #expect(harness.play(0, 6000) == .ok)
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.map(\.media) == (0..<150).map { media(Int64($0) * 40) })
    let origin = frames[0].at
    for frame in frames { #expect(frame.at - origin == frame.media - frames[0].media) }
    // The last frame lasts its 40 ms before the play completes (R63).
    #expect(harness.log.completions == 1)
    #expect(harness.clock.now.microseconds - origin == 6_000_000)
    #expect(harness.replay.currentTime?.milliseconds == recordingStart + 6000)
  }

  @Test func R42_atOneEighthEachFrameIsHeldEightTimesItsDuration() throws {
    let harness = try ReplayHarness(seconds: 3)
    harness.replay.setSpeed(.x0_125)
    harness.play(0, 1000)
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.count == 25)
    for (earlier, later) in zip(frames, frames.dropFirst()) { #expect(later.at - earlier.at == 320_000) }
  }

  /// The seven speeds and their rates (R1).
  private static let speeds: [(ReplaySpeed, Double)] = [
    (.x0_125, 0.125), (.x0_25, 0.25), (.x0_5, 0.5), (.x1, 1), (.x2, 2), (.x4, 4), (.x8, 8),
  ]

  @Test(
    "R39: at each of the seven speeds, s ms of media per ms of clock from frame to frame and to the end",
    arguments: 0..<7)
  func R39_eachSpeedSetsTheRate(index: Int) throws {
    let (speed, rate) = Self.speeds[index]
    let harness = try ReplayHarness(seconds: 3)
    harness.replay.setSpeed(speed)
    harness.play(0, 2000)
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.count + harness.replay.statistics.droppedFrames == 50, "\(speed)")
    #expect(harness.log.completions == 1)
    // From the second frame on (the first is shown at once, and a fast play's clock starts its start
    // latency later), media ÷ s of clock between frames, and to the end after the last one.
    #expect(frames.count >= 10, "\(speed)")
    for (earlier, later) in zip(frames.dropFirst(), frames.dropFirst(2)) {
      #expect(Double(later.at - earlier.at) == Double(later.media - earlier.media) / rate, "\(speed)")
    }
    let last = try #require(frames.last)
    #expect(Double(harness.clock.now.microseconds - last.at) == Double(media(2000) - last.media) / rate, "\(speed)")
  }

  @Test func R39_R43_atEightTimesFramesAreInOrderAndTheEndComesOnTime() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.replay.setSpeed(.x8)
    harness.play(0, 8000)
    let began = harness.clock.now.microseconds
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.map(\.media) == frames.map(\.media).sorted())
    #expect(frames.count + harness.replay.statistics.droppedFrames == 200)
    #expect(harness.log.completions == 1)
    // 8 s of media at 8x: 1 s of clock from the clock's start, its start latency after the first frame,
    // which is shown at once.
    #expect(
      harness.clock.now.microseconds - frames[0].at == 1_000_000 + PlaybackTimeline.playerStartLatency.microseconds)
    #expect(frames[0].at == began)
  }

  @Test func R40_R41_offNormalSpeedAudioIsNeitherDecodedNorPlayedAndComesBackAt1x() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    harness.replay.setSpeed(.x2)
    harness.play(0, 9000)
    harness.run(for: .seconds(1))
    let graph = try #require(harness.replay.activeGraph)
    func decoded() -> Int { graph.statistics().node(named: "Audio1Decoder")?.itemsOut ?? -1 }
    #expect(graph.statistics().node(named: "Audio1Decoder")?.itemsIn ?? 0 > 0)
    #expect(decoded() == 0)
    #expect(harness.audio.instants.isEmpty)
    #expect(!harness.renderer.frames.isEmpty)
    harness.replay.setSpeed(.x1)
    harness.run(for: .milliseconds(100))
    #expect(harness.replay.activeGraph === graph)
    #expect(decoded() > 0)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    // Audio plays again from the position (what was read ahead was kept undecoded, and what of it is
    // past is not played), in step with the picture.
    let resumed = try #require(harness.audio.instants.first)
    #expect(resumed.media >= media(2000))
    let picture = try #require(harness.renderer.frames.first { $0.media >= resumed.media })
    #expect(abs(picture.at - resumed.at - (picture.media - resumed.media)) <= 1_000)
  }

  @Test func R22_R23_R24_R25_R27_pauseFreezesThePositionAndResumeContinues() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(1000))
    #expect(harness.replay.pause() == .ok)
    #expect(harness.replay.pause() == .ok)  // R23
    let frozen = harness.replay.currentTime?.milliseconds
    let seen = harness.renderer.frames.count
    let reports = harness.log.times.count
    harness.run(for: .seconds(10))
    #expect(harness.replay.currentTime?.milliseconds == frozen)
    #expect(harness.renderer.frames.count == seen)
    #expect(harness.log.times.count == reports)
    let resumedAt = harness.clock.now.microseconds
    #expect(harness.replay.resume() == .ok)
    #expect(harness.replay.resume() == .ok)  // R25
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.map(\.media) == (0..<150).map { media(Int64($0) * 40) })
    // The frame after the pause comes when its remaining time has passed after the resume, not earlier.
    #expect(frames[seen].at >= resumedAt)
    #expect(frames[seen].at - resumedAt <= 40_000)
    #expect(harness.log.completions == 1)
  }

  @Test func R37_R39_aSpeedChangeKeepsThePosition() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(1000))
    let before = harness.renderer.frames.count
    #expect(harness.replay.setSpeed(.x2) == .ok)
    #expect(harness.replay.speed == .x2)
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.map(\.media) == (0..<150).map { media(Int64($0) * 40) })
    // After the change frames come every 20 ms.
    for (earlier, later) in zip(frames[(before + 1)...], frames[(before + 2)...]) {
      #expect(later.at - earlier.at == 20_000)
    }
  }

  @Test func R33_R34_aSeekPresentsTheFirstFrameNotEarlierThanTheTarget() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.play(0, 9000)
    harness.run(for: .milliseconds(500))
    // Mid-GOP and between frames: 3,010 ms (GOPs start at 0, 2 s, 4 s…).
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 3010)) == .ok)
    let seen = harness.renderer.frames.count
    harness.run(for: .milliseconds(200))
    let first = harness.renderer.frames[seen]
    #expect(first.media == media(3040))
    #expect(harness.log.times.last.map { $0 >= recordingStart + 3040 } == true)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
  }

  @Test func R33_aSeekFlushesTheRunningGraphInPlaceEvenAfterItsSourceEnded() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.play(0, 9000)
    harness.run(for: .milliseconds(8600))
    let graph = try #require(harness.replay.activeGraph)
    // The source has read the whole range by now; the seek back restarts it in the same graph.
    let seen = harness.renderer.frames.count
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 1010)) == .ok)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(harness.replay.activeGraph == nil)
    let after = harness.renderer.frames[seen...].map(\.media)
    #expect(after == (26..<225).map { media(Int64($0) * 40) })
    #expect(harness.log.completions == 1)
    #expect(harness.log.errors.isEmpty)
    // Frames of the first pass come before the seek's and none after it.
    #expect(harness.renderer.frames[..<seen].allSatisfy { $0.media < media(9000) })
    let statistics = graph.statistics()
    let decoder = try #require(statistics.nodes.first { $0.name == "Video0Decoder" })
    #expect(decoder.itemsIn > 225, "the decoder went on in the same graph: \(decoder.itemsIn) packets")
  }

  @Test("a paused play reads nothing ahead; playing, it reads ahead as far as its budget allows")
  func readAheadStopsWhilePaused() throws {
    // 60 s in 3 s objects of about 60 KB: the 16 MB budget would read the whole range at once.
    let harness = try ReplayHarness(seconds: 60)
    harness.play(0, 60000)
    harness.replay.pause()
    harness.run(for: .seconds(1))
    #expect(harness.renderer.frames.count == 1, "paused at once: the first frame is shown alone")
    // What the edges after the source hold (an object on each, one in the demuxer, packets on their way
    // to the decoder), and nothing more however long the pause lasts.
    let paused = harness.service.fetchedStarts
    #expect(paused == (0..<paused.count).map { Int64($0) * 3000 })
    #expect(paused.count < 12, "fetched \(paused)")
    harness.run(for: .seconds(30))
    #expect(harness.service.fetchedStarts == paused)
    // Playing, the source reads ahead as far as its budget allows.
    harness.replay.resume()
    harness.run(for: .seconds(3))
    #expect(harness.service.fetchedStarts.count == 20)
    // A seek back reads from the object holding the keyframe before its target (14 s lies in 12…15 s):
    // the play keeps what it fetched last (RecentObjects), so nothing is fetched again.
    harness.replay.pause()
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 15010)) == .ok)
    harness.run(for: .seconds(30))
    #expect(harness.service.fetchedStarts.count == 20, "fetched \(harness.service.fetchedStarts)")
    #expect(harness.renderer.frames.last?.media == media(15040))
    harness.replay.resume()
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.renderer.frames.last?.media == media(59960))
  }

  @Test("R47, R48: the last output leaving stops reading the source; one bound again reads from the position")
  func R47_R48_theLastOutputLeavingStopsReading() throws {
    // 60 s in 3 s objects: paused at once, the play has read only what its edges hold (as above).
    let harness = try ReplayHarness(seconds: 60)
    harness.play(0, 60000)
    harness.replay.pause()
    harness.run(for: .seconds(1))
    let fetched = harness.service.fetchedStarts
    #expect(fetched.count < 12, "fetched \(fetched)")
    #expect(harness.replay.activeGraph != nil)
    harness.replay.unbind(harness.videoOutput)
    harness.executor.runUntilIdle()
    #expect(harness.replay.activeGraph == nil, "the graph stays without outputs")
    // Resumed without outputs, nothing is read however long it runs, and nothing completes.
    harness.replay.resume()
    harness.run(for: .seconds(90))
    #expect(harness.service.fetchedStarts == fetched)
    #expect(harness.replay.activeGraph == nil)
    #expect(harness.log.completions == 0 && harness.log.errors.isEmpty)
    #expect(harness.replay.isActive)
    // Bound again, it reads from the position (the frozen first frame) on and completes once.
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view) { _ in }
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(view.frames.last?.media == media(59960))
    #expect((view.frames.first?.media ?? 0) >= media(0) && (view.frames.first?.media ?? .max) <= media(2000))
  }

  @Test("an empty G.711 record at the start of the sound is skipped: the audio output plays the rest")
  func anEmptyFirstSoundRecordIsSkipped() throws {
    var options = ReplayFixtures.options(seconds: 6)
    options.audioCodec = .g711a
    options.audioSampleRate = 8000
    let harness = try ReplayHarness(audio: true, options: options) { library in
      // The first audio record holds no byte (an empty packet is a decoder's end of stream).
      try LibraryFaults.rewriteRecords(segment: 0, in: library) { records in
        var records = records
        if let first = records.firstIndex(where: { $0.track.kind == .audio }) { records[first].payload = Data() }
        return records
      }
    }
    harness.play(0, 6000)
    harness.runToEnd()
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    #expect(!harness.outputEvents.contains { $0.event.hasPrefix("audio failed") }, "\(harness.outputEvents)")
    // About 6 s of 8 kHz sound, but for the one empty record.
    let samples = harness.audio.played.reduce(0) { $0 + $1.samples }
    #expect(samples > 8000 * 5, "\(samples) samples")
  }

  @Test func R32_ofSeveralSeeksTheLastWinsAndTheSupersededOneIsReported() throws {
    let harness = try ReplayHarness(seconds: 9)
    let superseded = Locked<[[Int64]]>([])
    harness.replay.onSeekSuperseded = { old, new in
      superseded.withLock { $0.append([old.milliseconds, new.milliseconds]) }
    }
    harness.play(0, 9000)
    harness.run(for: .milliseconds(200))
    let seen = harness.renderer.frames.count
    harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 2000))
    harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 7000))
    harness.run(for: .milliseconds(100))
    #expect(harness.renderer.frames[seen].media == media(7000))
    #expect(superseded.withLock { $0 } == [[recordingStart + 2000, recordingStart + 7000]])
    // A seek that took effect is not superseded by the next one.
    harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 8000))
    #expect(superseded.withLock { $0 }.count == 1)
    harness.runToEnd()
    #expect(harness.renderer.frames[seen...].allSatisfy { $0.media >= media(7000) })
  }

  @Test func R31_R35_R51_aSeekKeepsThePauseAndShowsItsFrame() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(300))
    harness.replay.pause()
    let seen = harness.renderer.frames.count
    harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 4010))
    harness.run(for: .seconds(5))
    // Still paused: the target's frame is shown and the position moves to it, nothing more.
    #expect(harness.renderer.frames.count == seen + 1)
    #expect(harness.renderer.frames[seen].media == media(4040))
    #expect(harness.replay.currentTime?.milliseconds == recordingStart + 4040)
    #expect(harness.log.times.last == recordingStart + 4040)
    let resumedAt = harness.clock.now.microseconds
    harness.replay.resume()
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames[(seen + 1)...].map(\.media) == (102..<150).map { media(Int64($0) * 40) })
    #expect(frames[seen + 1].at == resumedAt + 40_000)
    #expect(harness.log.completions == 1)
  }

  @Test("a failure of what a seek discarded neither ends the play nor stops its graph")
  func aFailureBeforeASeekIsDiscardedWithIt() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.service.hold(3000)
    harness.play(0, 9000)
    harness.run(for: .milliseconds(200))
    // The network fails the second object's transfer just as the seek is made: its completion is queued
    // on the executor ahead of the seek's flush, and the source raises it there, in the old generation.
    #expect(harness.service.fail(with: MediaError(.networkUnavailable, "the link went down")))
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 1010)) == .ok)
    harness.runToEnd()
    #expect(harness.log.errors.isEmpty)
    #expect(harness.log.completions == 1)
    #expect(harness.renderer.frames.last?.media == media(8960))
  }

  @Test func R31_R35_aSeekWhilePausedShowsTheVideoFrameAndPlaysNoAudio() throws {
    let harness = try ReplayHarness(seconds: 6, audio: true)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(300))
    harness.replay.pause()
    let (seenVideo, heardAudio) = (harness.renderer.frames.count, harness.audio.played.count)
    harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 4010))
    harness.run(for: .seconds(5))
    #expect(harness.renderer.frames.count == seenVideo + 1)
    #expect(harness.renderer.frames.last?.media == media(4040))
    #expect(harness.audio.played.count == heardAudio, "paused: the seek plays no sound")
    harness.replay.resume()
    harness.runToEnd()
    #expect(harness.audio.played.count > heardAudio)
    #expect(harness.audio.played[heardAudio...].allSatisfy { $0.time >= media(4000) })
    #expect(harness.log.completions == 1)
  }

  @Test func R16_R74_aStartInAHolePlaysTheNextRecordingAndReportsTheHoleOnce() throws {
    // Recording 0–3 s, hole 3–6 s, recording 6–9 s.
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 3)])
    harness.play(0, 9000, initial: 4000)
    harness.runToEnd()
    #expect(harness.renderer.frames.first?.media == media(6000))
    let gaps = harness.log.gaps
    #expect(gaps.count == 1)
    #expect(
      gaps.first?.range == MediaRange(startMilliseconds: recordingStart + 4000, endMilliseconds: recordingStart + 6000))
    #expect(gaps.first?.reasons == [.noRecording])
    // The hole is skipped without waiting: 3 s of recording take 3 s of clock.
    #expect(harness.clock.now.microseconds - harness.renderer.frames[0].at == 3_000_000)
    #expect(harness.log.completions == 1)
  }

  @Test func R74_aHoleOfAnAudioVideoPlayIsReportedOnceAsNoRecording() throws {
    // The detector sends a gap per track (the audio's follows its 64 ms frames): the play reports the
    // position's track's, once, clipped to where the play starts, with the sound among its tracks (R71).
    for initial: Int64 in [0, 4000] {
      let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 2)], audio: true)
      harness.play(0, 9000, initial: initial)
      harness.runToEnd()
      let expected = RecordingGap(
        range: MediaRange(
          startMilliseconds: recordingStart + max(3000, initial), endMilliseconds: recordingStart + 5000),
        tracks: [TrackID(.video, channel: 0), TrackID(.audio, channel: 1)], reasons: [.noRecording])
      #expect(harness.log.gaps == [expected], "initial \(initial)")
      #expect(harness.log.completions == 1)
    }
  }

  @Test func R74_aStartJustBeforeAHoleReportsTheHoleWhenTheAudiosFirstFrameComesFirst() throws {
    // The first frame not earlier than 2970 ms is the video's at 5000 (after the hole [3000, 5000)), the
    // audio's at 5056 is decoded first: the audio does not take the position, nor the hole, from the
    // video (found by a hostile run of `tipipe play --initial`).
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 2)], audio: true)
    harness.play(0, 9000, initial: 2970)
    harness.runToEnd()
    let gaps = harness.log.gaps
    #expect(gaps.map(\.tracks) == [[TrackID(.video, channel: 0), TrackID(.audio, channel: 1)]])
    #expect(
      gaps.first?.range == MediaRange(startMilliseconds: recordingStart + 3000, endMilliseconds: recordingStart + 5000))
    #expect(harness.log.times.first == recordingStart + 5000)
    #expect(harness.log.completions == 1)
  }

  @Test func R71_aGapListsTheTracksItAffects() throws {
    // A hole of the recording: the picture and the sound bound are both missing over it.
    let hole = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 2)], audio: true)
    hole.play(0, 9000)
    hole.runToEnd()
    #expect(hole.log.gaps.map(\.tracks) == [[TrackID(.video, channel: 0), TrackID(.audio, channel: 1)]])
    // A stretch without picture while the sound goes on: a gap of the picture alone.
    var options = ReplayFixtures.options(seconds: 9)
    options.videoGaps = [(offset: 3, length: 2)]
    let picture = try ReplayHarness(audio: true, options: options)
    picture.play(0, 9000)
    picture.runToEnd()
    #expect(picture.log.gaps.map(\.tracks) == [[TrackID(.video, channel: 0)]], "\(picture.log.gaps)")
    #expect(!picture.audio.played.isEmpty && picture.log.completions == 1)
    // Without a sound bound, a hole is the picture's gap alone (nothing else is followed).
    let alone = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 2)])
    alone.play(0, 9000)
    alone.runToEnd()
    #expect(alone.log.gaps.map(\.tracks) == [[TrackID(.video, channel: 0)]])
  }

  @Test func R71_aGapIsReportedBetweenTheTimeEventsAroundIt() throws {
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 3)])
    harness.play(0, 9000)
    harness.runToEnd()
    let entries = harness.log.entries
    guard let index = entries.firstIndex(where: { if case .gap = $0 { true } else { false } }) else {
      Issue.record("no gap reported")
      return
    }
    guard case .time(let before) = entries[index - 1], case .time(let after) = entries[index + 1] else {
      Issue.record("the gap is not between time events: \(entries)")
      return
    }
    #expect(before.milliseconds < recordingStart + 3000)
    #expect(after.milliseconds >= recordingStart + 6000)
    #expect(harness.log.gaps.count == 1)
  }

  @Test func R17_R36_R49_nothingAfterTheStartCompletesAtTheEnd() throws {
    let harness = try ReplayHarness(seconds: 3)
    #expect(harness.play(0, 10_000, initial: 5000) == .ok)
    harness.runToEnd()
    #expect(harness.renderer.frames.isEmpty)
    #expect(harness.log.completions == 1)
    #expect(harness.replay.currentTime?.milliseconds == recordingStart + 10_000)
    #expect(harness.log.times.last == recordingStart + 10_000)
  }

  @Test func R53_R54_timeEventsAtMostEvery100MsAndIncreasing() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.runToEnd()
    let times = harness.log.times
    #expect(times == times.sorted())
    for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier >= 100) }
    #expect(times.count >= 50)
    #expect(times.allSatisfy { (recordingStart...recordingStart + 6000).contains($0) })  // R50
  }

  @Test func R11_R12_R13_R14_rejectedPlaysChangeNothing() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(500))
    let position = harness.replay.currentTime?.milliseconds
    #expect(harness.play(3000, 3000) == .invalidArgument)
    #expect(harness.play(0, 3000, initial: 3000) == .invalidArgument)
    #expect(harness.play(0, 3000, initial: -1) == .invalidArgument)
    #expect(harness.replay.currentTime?.milliseconds == position)
    harness.runToEnd()
    #expect(harness.renderer.frames.count == 150)
    #expect(harness.log.completions == 1)
    let unbound = Replay(
      service: LocalLibraryService(directory: harness.library),
      environment: .manual(executor: harness.executor, clock: harness.clock))
    #expect(unbound.play(MediaRange(startMilliseconds: 0, endMilliseconds: 1), token: "t") == .notBound)
  }

  @Test func R44_R45_R46_R64_stopAndReplacementFireNoCallbacks() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(500))
    #expect(harness.replay.stop() == .ok)
    #expect(harness.replay.stop() == .ok)  // R46
    #expect(harness.replay.currentTime?.milliseconds == nil)
    harness.runToEnd()
    #expect(harness.log.completions == 0)
    #expect(harness.log.errors.isEmpty)
    #expect(harness.replay.pause() == .notStarted)  // R26
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart)) == .notStarted)  // R28
    // A new play replacing a running one: only the new one completes.
    harness.play(0, 6000)
    harness.run(for: .milliseconds(500))
    harness.play(3000, 4000)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.replay.currentTime?.milliseconds == recordingStart + 4000)
  }

  @Test func R29_aSeekOutsideTheRangeIsRefused() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(1000, 5000)
    harness.run(for: .milliseconds(100))
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 5000)) == .invalidArgument)
    #expect(harness.replay.seek(to: MediaTime(milliseconds: recordingStart + 999)) == .invalidArgument)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
  }

  @Test func R40_audioIsMutedOffNormalSpeed() throws {
    let harness = try ReplayHarness(seconds: 6, audio: true)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(2000))
    let atNormal = harness.audio.played.count
    #expect(atNormal > 0)
    harness.replay.setSpeed(.x2)
    harness.run(for: .milliseconds(1000))
    #expect(harness.audio.played.count == atNormal)
    harness.replay.setSpeed(.x1)
    harness.runToEnd()
    #expect(harness.audio.played.count > atNormal)
    #expect(harness.audio.played.allSatisfy { $0.volume == 100 })
  }

  @Test func S1_S14_aSnapshotIsAJPEGOfTheFramesSize() throws {
    let harness = try ReplayHarness(seconds: 3)
    harness.play(0, 3000)
    harness.run(for: .milliseconds(400))
    let frame = try #require(harness.replay.lastPresentedFrame)
    let jpeg = try frame.jpegData()
    #expect(jpeg.starts(with: [0xFF, 0xD8]))
    let file = harness.library.appendingPathComponent("snapshot.jpg")
    try jpeg.write(to: file)
    let probe = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0",
        file.path,
      ])
    #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,320,240")
  }

  @Test func anAudioGapBetweenAKeyframeAndItsFramesDoesNotResetTheVideoDecoder() throws {
    // Video resumes at 7 s with a keyframe; the audio gap is sent before the first audio packet after
    // the hole, between that keyframe and the frames that refer to it (found by `tipipe demo`).
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 4)], audio: true)
    harness.play(0, 9000, initial: 4000)
    harness.runToEnd()
    #expect(harness.log.errors.isEmpty)
    #expect(harness.renderer.frames.map(\.media) == (175..<225).map { media(Int64($0) * 40) })
    #expect(harness.log.completions == 1)
  }

  @Test func R1_speedRawValuesAndSpellings() {
    #expect(ReplaySpeed.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
    #expect(ReplaySpeed.allCases.map(\.description) == ["1", "2", "4", "8", "1/2", "1/4", "1/8"])
    #expect(ReplaySpeed.x0_125.rate == PlaybackRate(numerator: 1, denominator: 8))
    #expect(ReplaySpeed("1/8") == .x0_125)
    #expect(ReplaySpeed("3") == nil)
  }

  @Test func R8_R9_R38_aNewReplayIsAtNormalSpeedWithoutAPosition() throws {
    let harness = try ReplayHarness(seconds: 3)
    #expect(harness.replay.speed == .x1)
    #expect(harness.replay.currentTime?.milliseconds == nil)
    // A speed set before any play applies to it.
    #expect(harness.replay.setSpeed(.x2) == .ok)
    harness.play(0, 2000)
    #expect(harness.replay.currentTime?.milliseconds == nil)
    harness.runToEnd()
    let frames = harness.renderer.frames
    // At 2×: a frame every 20 ms of clock, once the clock started — its start latency after the first
    // picture, which is shown at once.
    let latency = PlaybackTimeline.playerStartLatency.microseconds
    #expect(frames[1].at - frames[0].at == 20_000 + latency && frames[2].at - frames[1].at == 20_000)
  }

  @Test func R20_aNewPlayStartsUnpaused() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(300))
    harness.replay.pause()
    harness.play(3000, 6000)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.renderer.frames.last?.media == media(5960))
  }

  @Test func R52_R69_handlersSetLateGetNoEarlierEvents() throws {
    let harness = try ReplayHarness(seconds: 3)
    harness.replay.onTimeChanged = nil
    harness.replay.onCompleted = nil
    harness.play(0, 3000)
    harness.run(for: .milliseconds(1000))
    let log = harness.log
    harness.replay.onTimeChanged = { log.append(.time($0)) }
    harness.replay.onCompleted = { log.append(.completed) }
    harness.runToEnd()
    #expect(log.times.allSatisfy { $0 >= recordingStart + 1000 })
    #expect(log.completions == 1)
  }

  @Test func R70_eventsOfAReplacedPlayAreDropped() throws {
    let harness = try ReplayHarness(seconds: 6)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(500))
    harness.play(4000, 5000)
    harness.runToEnd()
    let afterReplacement = harness.log.times.drop { $0 < recordingStart + 4000 }
    #expect(afterReplacement.allSatisfy { (recordingStart + 4000...recordingStart + 5000).contains($0) })
    #expect(harness.log.times.last == recordingStart + 5000)
    #expect(harness.log.completions == 1)
  }
}
