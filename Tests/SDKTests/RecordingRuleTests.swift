import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

extension SDKRules {
  /// Rules.md group T: RecordingTask.
  @Suite @MainActor struct Recording {
    /// Waits (cranking the graphs) for a task's result.
    private func stop(_ task: TiCloudStorageRecordingTask, _ session: SDKSession) async throws
      -> TiCloudStorageRecordingResult
    {
      try await session.pump { await task.stop() }
    }

    @Test func T1_T2_T3_T4_startRecordingNeedsAnActivePlayAndValidChannels() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let before = rig.replay.startRecording(videoChannelId: 0)
      #expect(before.code == TiCloudStorageErrorCode.notStarted && before.task == nil)
      #expect(rig.play() == ok)
      for (video, audio) in [(256, nil), (-1, nil), (0, 300)] as [(Int, Int?)] {
        let refused = rig.replay.startRecording(videoChannelId: video, audioChannelId: audio)
        #expect(refused.code == TiCloudStorageErrorCode.invalidArgument && refused.task == nil)
      }
      #expect(rig.replay.pause() == ok)
      let paused = rig.replay.startRecording(videoChannelId: 0)
      #expect(paused.code == ok && paused.task != nil)  // a paused play counts (T2)
      #expect(rig.replay.stop() == ok)
      #expect(try await stop(try #require(paused.task), session).code == TiCloudStorageErrorCode.noRecordableMedia)
      let stopped = rig.replay.startRecording(videoChannelId: 0)
      #expect(stopped.code == TiCloudStorageErrorCode.notStarted && stopped.task == nil)
      // Naturally completed, then failed: no play is active either.
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(rig.log.entries.contains(.completed))
      let completed = rig.replay.startRecording(videoChannelId: 0)
      #expect(completed.code == TiCloudStorageErrorCode.notStarted && completed.task == nil)
      session.service.failListings(with: .serviceUnavailable)
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(rig.log.entries.contains { if case .error = $0 { true } else { false } })
      let failed = rig.replay.startRecording(videoChannelId: 0)
      #expect(failed.code == TiCloudStorageErrorCode.notStarted && failed.task == nil)
      // No file was left by any of it.
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T5_T6_T8_T16_F10_stopGivesAPlayableMP4ToEveryCaller() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 3000) == ok)
      await session.run(for: .milliseconds(300))
      let first = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      let second = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .milliseconds(2500))
      var completions: [TiCloudStorageRecordingResult] = []
      first.stop { completions.append($0) }
      // Two awaited stops at once, besides the completion form's.
      let concurrent = try await session.pump {
        async let one = first.stop()
        async let two = first.stop()
        return await [one, two]
      }
      let a = try await stop(first, session)
      let b = try await stop(first, session)
      // A completion form after the result is known, too.
      first.stop { completions.append($0) }
      await session.drainMain { completions.count == 2 }
      #expect(a.code == ok)
      let file = try #require(a.file)
      // Every caller, whatever the form or the time, the same code and path (T6).
      let all = concurrent + [a, b] + completions
      #expect(all.count == 6)
      #expect(all.allSatisfy { $0.code == a.code && $0.file?.path == file.path }, "\(all.map(\.code))")
      // From the keyframe at 2 s (the first after the start at ~0.3 s) to where the play was.
      let probed = try probeRecording(file.path)
      #expect(probed.codecs == ["h264", "aac"])
      #expect(probed.frames >= 1)
      #expect(file.durationMs > 0 && file.durationMs <= 1000)
      #expect(abs(probed.duration * 1000 - Double(file.durationMs)) <= 45)
      #expect(
        URL(fileURLWithPath: file.path).deletingLastPathComponent().standardizedFileURL
          == session.media.standardizedFileURL)
      // The second task records the same channel into its own file, video only.
      let other = try await stop(second, session)
      #expect(other.code == ok && other.file?.path != file.path)
      #expect(try probeRecording(try #require(other.file).path).codecs == ["h264"])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T7_T11_T18_R68_aNaturalCompletionFinishesTheTaskWithSeekAndSpeedClosedUp() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(40))
      let task = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      #expect(rig.replay.dispose() == TiCloudStorageErrorCode.inUse)  // R75
      #expect(rig.replay.setSpeed(.x4) == ok)
      await session.run(for: .milliseconds(700))
      let before = try #require(rig.replay.currentTimeMs) - recordingStart
      #expect(rig.replay.seek(toTimeMs: recordingStart + 6000) == ok)
      // No Output bound: the task keeps the replay reading (T11).
      #expect(rig.video.detach() == ok)
      #expect(rig.audio.detach() == ok)
      await session.run(for: .seconds(20))
      #expect(rig.log.entries.contains(.completed))
      let result = try await stop(task, session)
      #expect(result.code == ok)
      let file = try #require(result.file)
      // [2 s, where the seek came) then [6 s, 9 s): source timing, the seek closed up, no filler.
      let probed = try probeRecording(file.path)
      let times = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path])
      #expect(before > 2000 && before < 3000)
      let expected = Double(before - 2000 + 3000) / 1000
      #expect(abs(probed.duration - expected) <= 0.1, "\(probed), \(times.split(separator: "\n").count) frames")
      #expect(probed.codecs == ["h264", "aac"])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T7_aNaturalCompletionFinishesEveryTaskAndALaterStopAnswersAtOnce() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 4000) == ok)
      await session.run(for: .milliseconds(40))
      let tasks = try [
        #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task),
        #require(rig.replay.startRecording(videoChannelId: 0).task),
      ]
      await session.run(for: .seconds(6))
      #expect(rig.log.entries.contains(.completed))
      // Both finished by themselves, without a stop.
      try await session.run(until: "both tasks to finish with the play") { tasks.allSatisfy { !$0.isActive } }
      // A stop now answers from what is kept: no graph job or timer runs before both answers come (the
      // executor is not cranked; only the main queue turns, each answer hopping through a global queue).
      var answers: [TiCloudStorageRecordingResult] = []
      for task in tasks { task.stop { answers.append($0) } }
      let deadline = ContinuousClock.now + testDeadline
      while answers.count < 2 {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut("the kept results") }
        await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
      }
      #expect(answers.count == 2)
      #expect(answers.allSatisfy { $0.code == ok && $0.file != nil })
      #expect(Set(answers.compactMap { $0.file?.path }).count == 2)
      for answer in answers {
        let probed = try probeRecording(try #require(answer.file).path)
        // The keyframe at 2 s to the recording's hole at 3 s (the play goes on to 4 s through it).
        #expect(abs(probed.duration - 1) <= 0.1, "\(probed)")
      }
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    /// The video streams of an MP4 as `width,height` lines, and its audio stream count.
    private func streams(_ path: String) throws -> (video: [String], audio: Int) {
      let video = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
      let audio = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "a", "-show_entries", "stream=index", "-of", "csv=p=0", path])
      return (video.split(separator: "\n").map(String.init), audio.split(separator: "\n").count)
    }

    @Test func T9_aTaskRecordsExactlyOneVideoChannel() async throws {
      let library = try twoVideoChannelLibrary()
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig()
      #expect(rig.play(0, 6000) == ok)
      await session.run(for: .milliseconds(300))
      let first = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      let second = try #require(rig.replay.startRecording(videoChannelId: 2).task)
      await session.run(for: .seconds(3))
      let a = try #require(try await stop(first, session).file)
      let b = try #require(try await stop(second, session).file)
      #expect(a.path != b.path)
      let (aVideo, aAudio) = try streams(a.path)
      let (bVideo, bAudio) = try streams(b.path)
      #expect(aVideo == ["320,240"] && aAudio == 1, "\(aVideo) \(aAudio)")
      #expect(bVideo == ["160,120"] && bAudio == 0, "\(bVideo) \(bAudio)")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    /// How a play ends for a task recording from 0.3 s (its file starts at the 2 s keyframe, T16).
    enum PlayEnding: CaseIterable {
      case stop, newPlay
    }

    @Test(arguments: PlayEnding.allCases)
    func T17_aStopOrANewPlayFinalizesTheTaskWithTheMediaSoFar(_ ending: PlayEnding) async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(300))
      let task = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      await session.run(for: .milliseconds(2500))
      let at = try #require(rig.replay.currentTimeMs) - recordingStart
      switch ending {
      case .stop:
        #expect(rig.replay.stop() == ok)
        await session.run(for: .milliseconds(300))
        #expect(task.hasEnded)  // finalized by the stop, not by task.stop()
        #expect(rig.play(5000, 9000) == ok)
      case .newPlay:
        #expect(rig.play(5000, 9000) == ok)
        #expect(task.hasEnded)
      }
      // More media plays; none of it goes into the finalized file.
      await session.run(for: .seconds(4))
      let result = try await stop(task, session)  // the result it already has (T7)
      #expect(result.code == ok)
      let file = try #require(result.file)
      // From the 2 s keyframe to where the play was (T18 would have closed the jump up with 5–9 s).
      #expect(abs(Int64(file.durationMs) - (at - 2000)) <= 120, "\(file.durationMs) ms, position \(at)")
      let probed = try probeRecording(file.path)
      #expect(probed.codecs == ["h264", "aac"])
      #expect(abs(probed.duration * 1000 - Double(file.durationMs)) <= 80)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T17_aPlayThatFailsFinalizesTheTaskWithTheMediaSoFar() async throws {
      let library = try TemporaryDirectory("tipipe-sdk-t17")
      try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library.url)
      // The second object is missing: the play ends with 6134 after the first (R57, R73).
      try LibraryFaults.removeObject(segment: 1, in: library.url)
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig()
      #expect(rig.play(0, 6000) == ok)
      await session.run(for: .milliseconds(300))
      let task = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      await session.run(for: .seconds(5))
      #expect(rig.log.entries.count { $0 == .error(TiErrorCode.recordingNotFound.rawValue) } == 1)
      #expect(task.hasEnded)
      let result = try await stop(task, session)
      #expect(result.code == ok)
      let file = try #require(result.file)
      // From the 2 s keyframe to the end of the first object (3 s).
      #expect(abs(Int64(file.durationMs) - 1000) <= 80, "\(file.durationMs) ms")
      #expect(try probeRecording(file.path).codecs == ["h264", "aac"])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T17_aTaskWithoutMediaWhenThePlayEndsHasNone() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      // Stopped before the first keyframe after its start (2 s): nothing was recordable.
      await session.run(for: .milliseconds(300))
      let early = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .milliseconds(500))
      #expect(rig.replay.stop() == ok)
      #expect(early.hasEnded)
      let none = try await stop(early, session)
      #expect(none.code == TiCloudStorageErrorCode.noRecordableMedia && none.file == nil)
      // A channel without media: a new play finishes it with nothing.
      #expect(rig.play() == ok)
      let empty = try #require(rig.replay.startRecording(videoChannelId: 9).task)
      await session.run(for: .milliseconds(500))
      #expect(rig.play() == ok)
      #expect(empty.hasEnded)
      let nothing = try await stop(empty, session)
      #expect(nothing.code == TiCloudStorageErrorCode.noRecordableMedia && nothing.file == nil)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T13_T14_T15_failuresLeaveNoFile() async throws {
      let session = try SDKSession(recorderPendingLimit: 1)
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      let overrun = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .milliseconds(500))
      #expect(try await stop(overrun, session).code == TiCloudStorageErrorCode.recordingOverrun)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)

      let second = try SDKSession()
      let rig2 = ReplayRig()
      #expect(rig2.play() == ok)
      // The media folder cannot hold files.
      try FileManager.default.removeItem(at: second.media)
      #expect(FileManager.default.createFile(atPath: second.media.path, contents: Data("x".utf8)))
      let unwritable = try #require(rig2.replay.startRecording(videoChannelId: 0).task)
      await second.run(for: .seconds(3))
      let failed = try await stop(unwritable, second)
      #expect(failed.code == TiCloudStorageErrorCode.fileWriteFailed && failed.file == nil)
      #expect(try Data(contentsOf: second.media) == Data("x".utf8))
      #expect(rig2.tearDown().allSatisfy { $0 == ok })
      #expect(second.close() == ok)
    }

    @Test func T12_aResolutionChangeEndsTheTaskWithUnsupportedFormatAndNoFile() async throws {
      let library = try resolutionChangeLibrary("tipipe-sdk-change")
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig(bindAudio: false)
      #expect(rig.play(0, 6000) == ok)
      let task = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .seconds(8))
      #expect(rig.log.entries.contains(.completed))
      let result = try await stop(task, session)
      #expect(result.code == TiCloudStorageErrorCode.unsupportedFormat)
      #expect(result.file == nil)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func T19_G711AudioIsTranscodedToAACInTheFile() async throws {
      let library = try TemporaryDirectory("tipipe-sdk-g711")
      var options = smallOptions(seconds: 6)
      options.audioCodec = .g711a
      options.audioSampleRate = 8000
      try LibrarySynthesizer(options: options).write(to: library.url)
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig()
      #expect(rig.play(0, 6000) == ok)
      let task = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      await session.run(for: .seconds(7))
      #expect(rig.log.entries.contains(.completed))
      let result = try await stop(task, session)
      #expect(result.code == ok)
      let file = try #require(result.file)
      // H.264 copied, G.711 as AAC at its own rate, lasting as long as the video (6 s, within a frame).
      #expect(try probeRecording(file.path).codecs == ["h264", "aac"])
      let audio = try run(
        "/usr/bin/ffprobe",
        [
          "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate,duration", "-of", "csv=p=0",
          file.path,
        ])
      let fields = audio.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
      #expect(fields.first == "8000")
      let seconds = try #require(fields.last.flatMap { Double($0) })
      #expect(abs(seconds - 6.0) <= 0.2, "audio lasts \(seconds) s")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }
  }
}
