import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// T13 on the engine: a recorder whose disk stalls ends during the play, counting only what played.
@Suite struct ReplayRecorderTests {
  @Test func T13_aWriterThatFallsBehindEndsItsTaskDuringThePlayAndLeavesNoFile() throws {
    let harness = try ReplayHarness(seconds: 9)
    let objects = try FileManager.default.subpathsOfDirectory(atPath: harness.library.path)
      .filter { !$0.hasSuffix(".json") }
      .map { try FileManager.default.attributesOfItem(atPath: harness.library.appendingPathComponent($0).path) }
      .compactMap { $0[.type] as? FileAttributeType == .typeRegular ? $0[.size] as? Int : nil }
    // About 3 s of the 9 s of media: read ahead, the whole recording is more than that.
    let limit = objects.reduce(0, +) / 3
    let output = harness.library.appendingPathComponent("recording.mp4")
    let disk = DispatchQueue(label: "a stalled disk")
    disk.suspend()
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: nil, maximumPendingBytes: limit,
      queue: disk)
    let ended = DispatchSemaphore(value: 0)
    let naturally = Locked<Bool?>(nil)
    harness.play(0, 9000)
    harness.run(for: .milliseconds(40))
    #expect(
      harness.replay.addRecorder(recorder) { value in
        naturally.withLock { $0 = value }
        ended.signal()
      } == .ok)
    // What was read ahead and not played does not count.
    harness.run(for: .seconds(1))
    #expect(!recorder.hasFallenBehind)
    harness.run(for: .seconds(5))
    #expect(recorder.hasFallenBehind)
    // The task ends during the play (on a queue of the recorder's), not at its end.
    #expect(ended.wait(timeout: .now() + 60) == .success)
    #expect(naturally.withLock { $0 } == false)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.renderer.frames.count == 225)
    disk.resume()
    let result = try recorder.finishWithinDeadline(playedToTheEnd: false)
    guard case .failure(let error) = result else {
      Issue.record("the recording did not fail: \(result)")
      return
    }
    #expect(error.kind == .fellBehind)
    // The result did not wait for the disk; the unfinished file's removal did.
    disk.sync {}
    // No file, finished or not.
    let left = try FileManager.default.contentsOfDirectory(atPath: harness.library.path)
    #expect(!left.contains { $0.hasPrefix("recording") || $0.hasPrefix(".recording") })
  }
}

/// The recording task's file waits for sound that starts seconds after the picture, as the export does.
@Suite struct ReplayRecorderStartTests {
  @Test(
    "a recording of a channel whose sound starts after its picture keeps the sound from there: within the wait (4 s in), and after the file was made (14 s in)",
    arguments: [(seconds: 9, silence: 4), (seconds: 20, silence: 14)])
  func soundThatStartsLate(_ media: (seconds: Int, silence: Int)) throws {
    var options = ReplayFixtures.options(seconds: media.seconds)
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 0, length: media.silence)]
    let harness = try ReplayHarness(options: options)
    #expect(harness.play(0, Int64(media.seconds) * 1000) == .ok)
    harness.run(for: .milliseconds(40))
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("late.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: TrackID(.audio, channel: 2), startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    // From the first keyframe after the play's start (2 s) to the end.
    #expect(milliseconds == Int64(media.seconds - 2) * 1000)
    let probed = try probeRecording(recorder.destination.path)
    #expect(probed.kinds.sorted() == ["audio", "video"], "\(probed)")
    // The sound from where it starts: its AAC frames (1024 samples each) last that long.
    let audio = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "a:0", "-count_packets", "-show_entries",
        "stream=nb_read_packets,sample_rate",
        "-of", "csv=p=0", recorder.destination.path,
      ]
    ).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Double($0) }
    let seconds = audio.count == 2 ? audio[1] * 1024 / audio[0] : 0
    #expect(abs(seconds - Double(media.seconds - media.silence)) < 0.2, "\(audio): \(seconds) s of sound")
  }

  @Test("a seek while the file waits for sound: what played before it is kept, and the sound joins when it begins")
  func aSeekWhileWaitingForSound() throws {
    var options = ReplayFixtures.options(seconds: 20)
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 0, length: 14)]
    let harness = try ReplayHarness(options: options)
    #expect(harness.play(0, 20_000) == .ok)
    harness.run(for: .milliseconds(40))
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("seek.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: TrackID(.audio, channel: 2), startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    // From the keyframe at 2 s to 6 s; then from the keyframe at 10 s to the end.
    harness.run(for: .milliseconds(6_000))
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 10_000)) == .ok)
    harness.runToEnd()
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    #expect((14_000...14_300).contains(milliseconds), "\(milliseconds) ms")
    let probed = try probeRecording(recorder.destination.path)
    #expect(probed.kinds.sorted() == ["audio", "video"], "\(probed)")
    #expect(abs(probed.duration - Double(milliseconds) / 1000) < 0.1, "\(probed)")
  }
}
