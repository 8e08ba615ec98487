import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// Audio and video of one play share one clock anchor (``PlaybackTimeline``): frames of the same media
/// time are presented at the same instant, whichever branch started first, across holes and pauses.
@Suite struct ReplayClockTests {
  /// Every presented video frame of media time in `range` (µs) against the audio at its time.
  func expectInStep(_ harness: ReplayHarness, from start: Int64, to end: Int64, _ label: String) {
    let sync = harness.lipSync(from: start, to: end)
    #expect(sync.inStep, "\(label): \(sync)")
  }

  @Test func aStartBetweenAudioFramesWaitsForEveryBranchsFirstFrame() throws {
    // At 1 s the first video frame is 1000 ms, the first audio frame 1024 ms (AAC frames of 64 ms),
    // and the video decoder holds a frame back: the audio's frame reaches its pacer first. The clock is
    // anchored at the earlier of the two (GStreamer's preroll): no video frame is presented late, and
    // the first audio frame is presented 24 ms after the first picture.
    let harness = try ReplayHarness(seconds: 6, audio: true)
    harness.play(0, 6000, initial: 1000)
    harness.runToEnd()
    #expect(harness.log.errors.isEmpty)
    let frames = harness.renderer.frames
    let first = try #require(frames.first)
    #expect(first.media == media(1000))
    for frame in frames { #expect(frame.at - first.at == frame.media - first.media, "video \(frame.media)") }
    let audio = try #require(harness.audio.instants.first)
    #expect(audio.media == media(1024))
    #expect(audio.at - first.at == 24_000)
    expectInStep(harness, from: media(1000), to: media(6000), "from the start")
    #expect(harness.log.completions == 1)
  }

  @Test func audioWithoutMediaAtTheStartHoldsThePictureBackNotAtAll() throws {
    // The clock starts with the picture: an audio channel without media, or audio missing from the
    // first object, makes the video wait for nothing.
    let mismatched = try ReplayHarness(seconds: 6)
    mismatched.replay.bindAudio(channel: 7, device: TimedAudioDevice(clock: mismatched.clock))
    let start = mismatched.clock.now.microseconds
    mismatched.play(0, 6000)
    mismatched.run(for: .seconds(2))
    #expect(mismatched.renderer.frames.first?.media == media(0))
    #expect(mismatched.renderer.frames.first?.at == start)

    let late = try ReplayHarness(seconds: 9, audio: true) { library in
      try LibraryFaults.rewriteRecords(segment: 0, in: library) { records in records.filter { $0.track.kind != .audio }
      }
    }
    late.play(0, 9000)
    late.runToEnd()
    let first = try #require(late.renderer.frames.first)
    #expect(first.media == media(0) && first.at == 0)
    for frame in late.renderer.frames { #expect(frame.at - first.at == frame.media - first.media) }
    expectInStep(late, from: media(3100), to: media(9000), "after the audio's gap")
  }

  @Test func videoMissingAtTheStartHoldsTheAudioBackAtMostThePrerollLimit() throws {
    // The video bound to a channel without media: the audio waits the preroll limit, then plays alone.
    let harness = try ReplayHarness(seconds: 6, audio: true, videoChannel: 5)
    let audio = harness.audio
    let start = harness.clock.now.microseconds
    harness.play(0, 6000)
    harness.run(for: .seconds(2))
    let first = try #require(audio.instants.first)
    #expect(first.media == media(0))
    #expect(first.at - start == PlaybackTimeline.prerollLimit.microseconds)
    #expect(harness.renderer.frames.isEmpty)
  }

  @Test func O40_aVideoOutputWithoutMediaFailsAfter5sOfPlaybackWhileTheAudioMovesThePosition() throws {
    // The video is bound to a channel without media: the audio plays alone (after the preroll limit),
    // moves the position, and the video output fails once 5 s of video of another channel have played.
    let harness = try ReplayHarness(seconds: 9, audio: true, videoChannel: 5)
    let start = harness.clock.now.microseconds
    let preroll = PlaybackTimeline.prerollLimit.microseconds
    harness.play(0, 9000)
    harness.run(for: .seconds(5))
    #expect(harness.outputEvents.map(\.event) == ["audio presenting"])
    // Reported every 100 ms or more, audio frames lasting 64 ms.
    let position = try #require(harness.log.times.last) - recordingStart
    #expect(position > 4300 && position <= 4500)
    harness.runToEnd()
    let events = harness.outputEvents
    #expect(events.map(\.event) == ["audio presenting", "video failed 6130", "audio completed"])
    // Noticed at the first video packet 5 s after the first one: when the audio frame of that time plays.
    let failedAt = try #require(events.first { $0.event == "video failed 6130" }).at - start
    #expect(failedAt >= preroll + 5_000_000 && failedAt < preroll + 5_064_000)
    #expect(harness.renderer.frames.isEmpty)
    // The play lasts as long as its audio, and completes.
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    #expect(harness.clock.now.microseconds - start >= preroll + 8_900_000)
    #expect(harness.log.times.last == recordingStart + 9000)
  }

  @Test func O40_R74_aHoleBeforeTheAudioPlaysIsReportedWhenTheVideoPresentsNothing() throws {
    // The play starts in the hole: crossed before anything presents, it is reported once, before the
    // first time event, though the video never presents and the audio takes the position over.
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 3)], audio: true, videoChannel: 5)
    harness.play(0, 9000, initial: 4000)
    harness.runToEnd()
    let gaps = harness.log.gaps
    // Once: the video's report of it (before the audio took over) or the audio's, not both.
    #expect(gaps.count == 1)
    #expect(gaps.first?.range.start == MediaTime(milliseconds: recordingStart + 4000))
    #expect(gaps.first?.reasons.contains(.noRecording) == true)
    // Reported before the first time event.
    let entries = harness.log.entries
    let gap = try #require(entries.firstIndex { if case .gap = $0 { true } else { false } })
    let time = try #require(entries.firstIndex { if case .time = $0 { true } else { false } })
    #expect(gap < time)
    #expect(harness.log.completions == 1)
  }

  @Test func O40_aVideoOnlyPlayWithoutMediaOfTheChannelFailsItsOutputAndCompletes() throws {
    // Nothing presents: every stretch is a gap of the one track the play presents, skipped; the output
    // fails rather than completes.
    let harness = try ReplayHarness(seconds: 9, videoChannel: 5)
    harness.play(0, 9000)
    harness.runToEnd()
    #expect(harness.outputEvents.map(\.event) == ["video failed 6130"])
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    #expect(
      harness.log.gaps.map(\.range) == [
        MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 9000)
      ])
    #expect(harness.log.gaps.allSatisfy { $0.reasons.contains(.trackUnavailable) })
  }

  @Test func anHourAt1xThroughTheWholeGraphPresentsEveryFrameOnceAtItsTime() throws {
    // The whole replay graph (source, verifier, demuxer, detector, decoder, pacer) on the virtual clock:
    // an hour of 16x16 video at 1 frame per second in 60 s objects.
    var options = smallOptions(seconds: 3600)
    options.width = 16
    options.height = 16
    options.fps = 1
    options.gop = 2
    options.audioCodec = nil
    options.segmentSeconds = 60
    let harness = try ReplayHarness(options: options)
    harness.play(0, 3_600_000)
    harness.runToEnd(limit: .seconds(7200))
    let frames = harness.renderer.frames
    #expect(frames.count == 3600)
    let first = try #require(frames.first)
    #expect(first.media == media(0))
    var misplaced = 0
    for (index, frame) in frames.enumerated()
    where frame.media != media(Int64(index) * 1000) || frame.at - first.at != frame.media - first.media {
      misplaced += 1
    }
    #expect(misplaced == 0)
    // The last frame lasts its second: the end is an hour after the first picture.
    #expect(harness.clock.now.microseconds - first.at == 3_600_000_000)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty && harness.log.gaps.isEmpty)
    #expect(harness.log.times == harness.log.times.sorted() && harness.log.times.last == recordingStart + 3_600_000)
  }

  @Test func aVideoOnlyGapKeepsTheAudiosTime() throws {
    // Objects [0, 3) [3, 6) [6, 9) s; the third has no video before its keyframe at 8 s: a video gap
    // from 6 s while audio goes on. The picture waits for the audio to reach 8 s.
    let harness = try ReplayHarness(seconds: 9, audio: true) { library in
      try LibraryFaults.rewriteRecords(segment: 2, in: library) { records in
        records.filter { $0.track.kind != .video || $0.timestampMilliseconds >= recordingStart + 8000 }
      }
    }
    harness.play(0, 9000)
    harness.runToEnd()
    #expect(harness.log.errors.isEmpty)
    let frames = harness.renderer.frames
    #expect(!frames.contains { $0.media >= media(6000) && $0.media < media(8000) })
    let before = try #require(frames.last { $0.media < media(6000) })
    let after = try #require(frames.first { $0.media >= media(6000) })
    #expect(after.media == media(8000))
    #expect(after.at - before.at == 2_040_000)
    #expect(harness.audio.instants.contains { $0.media > media(6000) && $0.media < media(8000) })
    expectInStep(harness, from: media(0), to: media(6000), "before the video gap")
    expectInStep(harness, from: media(8000), to: media(9000), "after the video gap")
    #expect(harness.log.completions == 1)
  }

  @Test func aHoleInEveryTrackIsSkippedByBothInStep() throws {
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 2)], audio: true)
    harness.play(0, 9000)
    harness.runToEnd()
    let frames = harness.renderer.frames
    let before = try #require(frames.last { $0.media < media(3000) })
    let after = try #require(frames.first { $0.media >= media(5000) })
    #expect(after.media == media(5000))
    // The hole takes no time: the frame after it comes when the last sound before it ends — the AAC
    // frame from 2944 ms, 64 ms long, 8 ms past the last picture's end.
    #expect(after.at - before.at == 48_000)
    expectInStep(harness, from: media(0), to: media(3000), "before the hole")
    expectInStep(harness, from: media(5000), to: media(9000), "after the hole")
    #expect(harness.log.completions == 1)
  }

  @Test func audioResumesAtThePositionWhenTheSpeedReturnsTo1x() throws {
    // At 4× the audio is muted and not decoded, while the graph reads ahead of the position; back at 1×
    // the audio of the position plays at once, in step with the video (not after what was read ahead).
    let harness = try ReplayHarness(seconds: 12, audio: true)
    harness.play(0, 12_000)
    harness.run(for: .seconds(1))
    harness.replay.setSpeed(.x4)
    harness.run(for: .seconds(1))
    let heard = harness.audio.instants.count
    harness.replay.setSpeed(.x1)
    let back = harness.clock.now.microseconds
    let position = try #require(harness.renderer.frames.last).media
    harness.run(for: .seconds(2))
    let after = Array(harness.audio.instants[heard...])
    let first = try #require(after.first)
    // Decoding resumes at the next audio packet the graph hands on, and plays the first frame that is
    // on time: within a few 64 ms frames (it was 1.85 s, what the graph had read ahead, before the
    // packets were kept).
    #expect(first.at - back <= 200_000, "the audio came back \(first.at - back) µs after the speed")
    #expect(abs(first.media - position) <= 200_000, "the audio came back at \(first.media), the video at \(position)")
    harness.runToEnd()
    expectInStep(harness, from: position + 200_000, to: media(12_000), "after the return to 1x")
    #expect(harness.log.completions == 1)
  }

  @Test func aPauseKeepsAudioAndVideoInStep() throws {
    let harness = try ReplayHarness(seconds: 6, audio: true)
    harness.play(0, 6000)
    harness.run(for: .milliseconds(1_010))
    harness.replay.pause()
    harness.run(for: .milliseconds(700))
    harness.replay.resume()
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    expectInStep(harness, from: media(0), to: media(960), "before the pause")
    expectInStep(harness, from: media(1100), to: media(6000), "after the pause")
    // The pause shows: the media time after it lags the clock by its length.
    let late = try #require(harness.renderer.frames.first { $0.media == media(2000) })
    let start = try #require(harness.renderer.frames.first)
    #expect(late.at - start.at == 2_000_000 + 700_000)
  }
}
