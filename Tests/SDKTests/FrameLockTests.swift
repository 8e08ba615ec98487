import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import Testing

@testable import TiCloudStorage

#if DEBUG
  extension SDKRules {
    /// The whole path of a presented frame through the SDK — graph, Replay, the Video Output's render and
    /// the Audio Output — takes at most one lock (issue 25), counted by the engine's debug hook
    /// (`LockTally`) on the executor's thread, with the SDK's runtime lock and the output's render lock
    /// among those counted. The view and the device count with atomics, so that what is counted is the
    /// SDK's, not the application's.
    @Suite @MainActor struct FrameLocks {
      /// A host view that takes no lock.
      final class CountingView: VideoRenderer {
        let frames = Atomic(0)
        func render(_ frame: DecodedFrame) { frames.add(1, ordering: .relaxed) }
      }

      /// An audio device that takes no lock.
      final class CountingDevice: AudioDevice {
        let frames = Atomic(0)
        func play(_ frame: DecodedFrame, volume: Int) { frames.add(1, ordering: .relaxed) }
      }

      @Test func aFramePresentedThroughTheSDKTakesAtMostOneLock() async throws {
        let session = try SDKSession()
        let storage = TiCloudStorage(token: "device-token")
        let replay = storage.createReplay(callbackThread: .main)
        let video = TiCloudStorageVideoOutput()
        let view = CountingView()
        let device = CountingDevice()
        let audio = TiCloudStorageAudioOutput(device: device)
        let log = SDKLog()
        log.watch(replay)
        #expect(video.attachView(view) == TiCloudStorageErrorCode.ok)
        #expect(video.attach(replay: replay, channelId: 0) == TiCloudStorageErrorCode.ok)
        #expect(audio.attach(replay: replay, channelId: 1) == TiCloudStorageErrorCode.ok)
        #expect(
          replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000) == TiCloudStorageErrorCode.ok)
        await session.run(for: .milliseconds(500))
        let before = view.frames.load(ordering: .relaxed) + device.frames.load(ordering: .relaxed)
        // 2.5 s of media before the library's hole at 3 s, position reports included.
        let target = session.clock.now + .milliseconds(2500)
        let taken = LockTally.counting {
          session.executor.runUntilIdle(firingTimersOf: session.clock, through: target)
        }
        let presented = view.frames.load(ordering: .relaxed) + device.frames.load(ordering: .relaxed) - before
        #expect(presented > 80)
        // 2026-12-05: 71 for 101 frames (62 pictures, 39 audio frames): the Video Output's render lock per
        // picture, the audio output none, and a few per object the test's scripted service lends out; the
        // runtime's lock is taken neither per frame nor per position report on this thread (the report's
        // objects are asked for where it is delivered).
        #expect(taken <= presented, "\(taken) locks for \(presented) frames")
        await session.drainMain()
        #expect(log.entries.contains { if case .time = $0 { true } else { false } })
        #expect(replay.stop() == TiCloudStorageErrorCode.ok)
        #expect(video.detach() == TiCloudStorageErrorCode.ok)
        #expect(audio.detach() == TiCloudStorageErrorCode.ok)
        #expect(video.detachView() == TiCloudStorageErrorCode.ok)
        #expect(video.dispose() == TiCloudStorageErrorCode.ok)
        #expect(audio.dispose() == TiCloudStorageErrorCode.ok)
        #expect(replay.dispose() == TiCloudStorageErrorCode.ok)
        #expect(storage.dispose() == TiCloudStorageErrorCode.ok)
        #expect(session.close() == TiCloudStorageErrorCode.ok)
      }
    }
  }
#endif
