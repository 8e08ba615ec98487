import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// Recorders added while a play runs: the graph's tap hands them what it kept from their start on, so
/// the graph is not rebuilt and nothing is read again (T16: the file starts at the first keyframe at or
/// after the start); the graph is rebuilt only when the tap cannot serve them.
@Suite("Recorders joining a running play")
struct RecorderJoinTests {
  @Test(
    "a recorder added while the play runs joins in place: nothing is read again, its file starts at the next keyframe")
  func aRecorderJoinsTheRunningGraph() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_100))
    let graph = try #require(harness.replay.activeGraph)
    let start = try #require(harness.replay.recordingStart)
    #expect(
      start > MediaTime(microseconds: harness.media(3_000)) && start < MediaTime(microseconds: harness.media(4_000)))
    let output = harness.library.appendingPathComponent("joined.mp4")
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: nil, startsAt: start)
    let ended = Locked<[Bool]>([])
    #expect(harness.replay.addRecorder(recorder) { naturally in ended.withLock { $0.append(naturally) } } == .ok)
    #expect(harness.replay.activeGraph === graph, "the graph was rebuilt for the recorder")
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(ended.withLock { $0 } == [true])
    // Three 3-second objects, each fetched once: the recorder took what the graph had read already.
    #expect(harness.service.fetchedStarts.count == 3, "fetched \(harness.service.fetchedStarts)")
    #expect(harness.renderer.frames.count == 225)
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    // From the keyframe at 4 s (the first at or after 3.1 s) to the end: 5 s, 125 pictures.
    #expect(milliseconds == 5_000)
    let probed = try probeRecording(output.path)
    #expect(probed.frames == 125)
    #expect(abs(probed.duration - 5.0) < 0.05, "duration \(probed.duration)")
    #expect(probed.kinds == ["video"])
  }

  @Test(
    "a recorder of a picture bound right after the last picture left rebuilds the graph (the router dropped its packets from the start on): it starts at the first keyframe after its start"
  )
  func aRecorderOfAPicturePassedLate() throws {
    // The last picture leaves: the sound drives on, and every picture passes from now on.
    let (harness, graph) = try ReplayHarness.lastPictureLeft()
    let start = try #require(harness.replay.recordingStart)
    let output = harness.library.appendingPathComponent("other-lens.mp4")
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: 2), audioTrack: nil, startsAt: start)
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    // The tap has nothing of channel 2 from before: what was read ahead of the position is read again.
    #expect(harness.replay.activeGraph !== graph)
    harness.runToEnd()
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    // From the keyframe at 2 s (the first at or after 1.5 s) to the end: 10 s, 250 pictures.
    #expect(milliseconds == 10_000)
    let probed = try probeRecording(output.path)
    #expect(probed.frames == 250 && abs(probed.duration - 10.0) < 0.05, "\(probed)")
  }

  @Test("a recorder whose start the tap let go of, and one of audio without a transcoder, rebuild the graph")
  func recordersTheTapCannotServeRebuild() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(6_100))
    let graph = try #require(harness.replay.activeGraph)
    // From the recording's start: the tap keeps the last 4 s of media, not its first seconds.
    let early = ReplayRecorder(
      destination: harness.library.appendingPathComponent("early.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: nil, startsAt: MediaTime(microseconds: harness.media(0)))
    #expect(harness.replay.addRecorder(early) { _ in } == .ok)
    harness.run(for: .milliseconds(100))
    let rebuilt = try #require(harness.replay.activeGraph)
    #expect(rebuilt !== graph)
    // With sound: the graph has no transcoder before its tap (no recorder of audio when it was built).
    let start = try #require(harness.replay.recordingStart)
    let withSound = ReplayRecorder(
      destination: harness.library.appendingPathComponent("sound.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: TrackID(.audio, channel: 1), startsAt: start)
    #expect(harness.replay.addRecorder(withSound) { _ in } == .ok)
    harness.run(for: .milliseconds(100))
    let transcoding = try #require(harness.replay.activeGraph)
    #expect(transcoding !== rebuilt)
    // A second recorder of sound finds the transcoder in place: it joins.
    let second = ReplayRecorder(
      destination: harness.library.appendingPathComponent("second.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: TrackID(.audio, channel: 1), startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(second) { _ in } == .ok)
    #expect(harness.replay.activeGraph === transcoding)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    for recorder in [early, withSound, second] {
      guard case .success = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
        Issue.record("\(recorder.destination.lastPathComponent) failed")
        continue
      }
    }
    // The joined recorder's file has its sound: the transcoder fed the tap it joined.
    let probed = try probeRecording(second.destination.path)
    #expect(probed.kinds.sorted() == ["audio", "video"])
    #expect(probed.frames > 0)
  }

  @Test(
    "a recorder of a channel whose packets from its start on the router dropped (routed just now) rebuilds the graph, and misses nothing"
  )
  func aRecorderOfALateRoutedChannelRebuilds() throws {
    let harness = try ReplayHarness(seconds: 9) { library in
      try addSecondVideoChannel(to: library, options: ReplayFixtures.options(seconds: 9))
    }
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_100))
    // A second video output of channel 2 joins as a branch: the router lets channel 2 through from now.
    let second = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 2, renderer: second)
    let graph = try #require(harness.replay.activeGraph)
    harness.run(for: .milliseconds(40))
    #expect(harness.replay.activeGraph === graph)
    // The tap has nothing of channel 2 from before: the recorder cannot join.
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("two.mp4"), videoTrack: TrackID(.video, channel: 2),
      audioTrack: nil, startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    #expect(harness.replay.activeGraph !== graph)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    // From channel 2's keyframe at 4 s to the end.
    #expect(milliseconds == 5_000)
    #expect(try probeRecording(recorder.destination.path).frames == 125)
  }

  @Test("a recorder added right after a seek, before the seek's flush reached the tap, records from the target only")
  func aRecorderAddedRightAfterASeek() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(6_100))
    let graph = try #require(harness.replay.activeGraph)
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 3_000)) == .ok)
    let start = try #require(harness.replay.recordingStart)
    #expect(start == MediaTime(microseconds: harness.media(3_000)))
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("after-seek.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: nil, startsAt: start)
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    // The 4 s keyframe to the end, once: nothing of what was read before the seek.
    #expect(milliseconds == 5_000)
    #expect(try probeRecording(recorder.destination.path).frames == 125)
  }
}
