import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok
private let inUse = TiCloudStorageErrorCode.inUse

extension SDKRules {
  /// Rules.md group O: Audio and Video Output.
  @Suite @MainActor struct Outputs {
    @Test func O1_O2_O3_stateRawValuesAndANewOutputIsIdleAndUnbound() {
      #expect(
        [TiCloudStorageAudioOutputState.idle, .buffering, .playing, .failed, .paused, .completed].map(\.rawValue)
          == [0, 1, 2, 3, 4, 5])
      #expect(
        [TiCloudStorageVideoOutputState.idle, .buffering, .rendering, .failed, .paused, .completed].map(\.rawValue)
          == [0, 1, 2, 3, 4, 5])
      let video = TiCloudStorageVideoOutput()
      #expect(video.state == .idle)
      #expect(video.core.binding == nil)
      #expect(!video.core.hasView)
      #expect(TiCloudStorageAudioOutput().state == .idle)
    }

    @Test func O4_O9_O27_anOutputsStateMovesOnlyAsTheRulesSay() {
      typealias State = OutputCore.State
      let all: [State] = [.idle, .buffering, .active, .failed, .paused, .completed]
      // What each state may move to (rules O4–O9, O24–O28), every other move refused.
      let allowed: [State: Set<State>] = [
        .idle: [.buffering],
        .buffering: [.idle, .active, .paused, .failed, .completed],
        .active: [.idle, .buffering, .paused, .failed, .completed],
        .paused: [.idle, .buffering, .active, .failed, .completed],
        .failed: [.idle, .buffering],
        .completed: [.idle, .buffering],
      ]
      for from in all {
        for to in all where to != from {
          let core = OutputCore(kind: .video)
          core.state = from
          core.notifyState = { _ in }
          let call = core.move(to: to)
          let legal = allowed[from]?.contains(to) == true
          #expect(core.state == (legal ? to : from), "\(from) → \(to)")
          #expect((call != nil) == legal, "\(from) → \(to): told")
        }
      }
      // A failed output is not paused, completed or brought back to life by a frame (O7, O8, O27).
      let failed = OutputCore(kind: .audio)
      failed.state = .failed
      #expect(failed.move(to: .paused) == nil && failed.move(to: .active) == nil && failed.state == .failed)
    }

    @Test func O5_O6_O7_O8_O11_O12_statesFollowThePlayWithoutDuplicates() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(500))
      #expect(rig.replay.pause() == ok)
      // The state is updated before the delegate hears of it (O12).
      #expect(rig.video.state == .paused)
      #expect(!rig.log.videoStates.contains(.paused))
      #expect(rig.replay.pause() == ok)
      await session.drainMain()
      #expect(rig.log.videoStates.last == .paused)
      #expect(rig.audio.state == .paused)
      #expect(rig.replay.resume() == ok)
      await session.run(for: .seconds(10))
      #expect(rig.log.videoStates == [.buffering, .rendering, .paused, .rendering, .completed])
      #expect(rig.log.audioStates == [.buffering, .playing, .paused, .playing, .completed])
      // Stop never leads to completed (O8).
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.replay.stop() == ok)
      await session.run(for: .seconds(10))
      #expect(rig.video.state == .idle)
      #expect(rig.log.videoStates.suffix(3) == [.buffering, .rendering, .idle])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O10_theDelegateIsHeldWeakly() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      weak var released: SDKLog?
      do {
        let delegate = SDKLog()
        released = delegate
        rig.video.delegate = delegate
      }
      #expect(released == nil)
      #expect(rig.video.delegate == nil)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.state == .rendering)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O16_aSecondOutputOnABoundChannelIsRefusedAndBothBindingsStay() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.audio.setVolume(30) == ok)
      // Another Output of each kind on the channels the rig's Outputs hold: refused, both unbound.
      let secondDevice = CaptureAudioDevice()
      let secondAudio = TiCloudStorageAudioOutput(device: secondDevice)
      #expect(secondAudio.attach(replay: rig.replay, channelId: 1) == inUse)
      let secondView = FrameCaptureRenderer()
      let secondVideo = TiCloudStorageVideoOutput()
      #expect(secondVideo.attachView(secondView) == ok)
      #expect(secondVideo.attach(replay: rig.replay, channelId: 0) == inUse)
      #expect(secondAudio.core.binding == nil && secondVideo.core.binding == nil)
      // The holders' bindings are as they were: they present, the refused ones nothing.
      #expect(rig.audio.core.binding?.replay === rig.replay && rig.audio.core.binding?.channel == 1)
      #expect(rig.video.core.binding?.replay === rig.replay && rig.video.core.binding?.channel == 0)
      // O31: the refused Output's volume is its own, and the holder keeps its 30.
      #expect(secondAudio.setVolume(90) == ok)
      #expect(rig.play() == ok)
      await session.run(for: .seconds(1))
      #expect(!rig.device.played.isEmpty && rig.device.played.allSatisfy { $0.volume == 30 })
      #expect(!rig.view.renderedTimes.isEmpty)
      #expect(secondDevice.played.isEmpty && secondView.renderedTimes.isEmpty)
      #expect(secondVideo.detachView() == ok && secondVideo.dispose() == ok && secondAudio.dispose() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O31_setVolumeChangesOnlyItsOwnOutputOnTheSameReplay() async throws {
      // Sound on channels 1 and 2: two Audio Outputs of one Replay play at once.
      let library = try TemporaryDirectory("tipipe-sdk-two-sounds")
      var options = smallOptions(seconds: 3)
      options.otherAudioChannels = [2]
      try LibrarySynthesizer(options: options).write(to: library.url)
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig()
      let otherDevice = CaptureAudioDevice()
      let other = TiCloudStorageAudioOutput(device: otherDevice)
      #expect(other.attach(replay: rig.replay, channelId: 2) == ok)
      #expect(rig.audio.setVolume(30) == ok)
      #expect(other.setVolume(80) == ok)
      #expect(rig.play(0, 3000) == ok)
      await session.run(for: .seconds(1))
      #expect(rig.audio.setVolume(10) == ok)
      let (first, second) = (rig.device.played.count, otherDevice.played.count)
      await session.run(for: .seconds(1))
      #expect(first > 0 && second > 0)
      #expect(rig.device.played.prefix(first).allSatisfy { $0.volume == 30 })
      #expect(rig.device.played.count > first && rig.device.played.dropFirst(first + 2).allSatisfy { $0.volume == 10 })
      #expect(otherDevice.played.count > second && otherDevice.played.allSatisfy { $0.volume == 80 })
      #expect(other.detach() == ok && other.dispose() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O13_O14_O15_O16_O17_bindingRules() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let other = rig.storage.createReplay()
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == ok)
      #expect(rig.video.attach(replay: rig.replay, channelId: 2) == inUse)
      #expect(rig.video.attach(replay: other, channelId: 0) == inUse)
      #expect(rig.video.core.binding?.channel == 0)
      #expect(rig.video.core.binding?.replay === rig.replay)
      let second = TiCloudStorageVideoOutput()
      #expect(second.attach(replay: rig.replay, channelId: 0) == inUse)
      #expect(second.core.binding == nil)
      // Another kind, or another channel, may bind.
      let audio = TiCloudStorageAudioOutput()
      #expect(audio.attach(replay: rig.replay, channelId: 0) == ok)
      #expect(second.attach(replay: rig.replay, channelId: 3) == ok)
      #expect(second.detach() == ok)
      #expect(audio.detach() == ok)
      #expect(second.dispose() == ok)
      #expect(audio.dispose() == ok)
      #expect(other.dispose() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O4_O18_R47_R48_anOutputBoundWhileRunningStartsAtTheNextKeyframe() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(500))
      #expect(rig.video.detach() == ok)
      #expect(rig.video.state == .idle)
      let before = rig.view.renderedTimes.count
      await session.run(for: .milliseconds(100))
      let position = try #require(rig.replay.currentTimeMs)
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == ok)
      await session.run(for: .seconds(2))
      let after = Array(rig.view.renderedTimes.dropFirst(before))
      let first = try #require(after.first)
      // The first keyframe after the position (2 s GOPs from the recording's start).
      #expect(first >= position * 1000)
      #expect(first == (recordingStart + 2000) * 1000)
      #expect(rig.video.state == .rendering)
      // The last Output leaving stops reading: the position freezes, nothing completes (R47, R48).
      #expect(rig.video.detach() == ok)
      #expect(rig.audio.detach() == ok)
      await session.run(for: .milliseconds(50))
      let frozen = rig.replay.currentTimeMs
      await session.run(for: .seconds(20))
      #expect(rig.replay.currentTimeMs == frozen)
      #expect(!rig.log.entries.contains(.completed))
      #expect(rig.replay.pause() == ok)
      #expect(rig.replay.resume() == ok)
      // Attaching again resumes from the position and completes.
      #expect(rig.audio.attach(replay: rig.replay, channelId: 1) == ok)
      await session.run(for: .seconds(20))
      #expect(rig.log.entries.contains(.completed))
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R13_R14_aPlayWithEveryOutputDetachedIsRefusedAndTheFrozenPlayGoesOn() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(1500))
      #expect(rig.video.detach() == ok)
      #expect(rig.audio.detach() == ok)
      await session.run(for: .milliseconds(50))
      let frozen = try #require(rig.replay.currentTimeMs)
      // No Output bound: refused (R13), and the frozen play stays as it was (R14): not replaced by the
      // refused 3 s play, not stopped.
      #expect(rig.play(0, 3000) == TiCloudStorageErrorCode.notBound)
      await session.run(for: .seconds(2))
      #expect(rig.replay.currentTimeMs == frozen)
      let before = rig.view.renderedTimes.count
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == ok)
      #expect(rig.audio.attach(replay: rig.replay, channelId: 1) == ok)
      await session.run(for: .seconds(12))
      // It goes on from its position to its own end (9 s), once, without an error.
      let resumed = try #require(rig.view.renderedTimes.dropFirst(before).first)
      #expect(resumed >= frozen * 1000)
      #expect(rig.replay.currentTimeMs == recordingStart + 9000)
      #expect(rig.log.entries.filter { $0 == .completed }.count == 1)
      #expect(!rig.log.entries.contains { if case .error = $0 { true } else { false } })
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O19_O20_O36_O38_detachAndDetachViewAreIndependentAndIdempotent() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.video.detach() == ok)
      #expect(rig.video.detach() == ok)
      #expect(rig.video.attachView(rig.view) == ok)  // the view is still bound
      #expect(rig.video.detachView() == ok)
      #expect(rig.video.detachView() == ok)
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == ok)
      #expect(rig.video.attachView(rig.view) == ok)
      #expect(rig.video.detachView() == ok)
      #expect(rig.video.core.binding != nil)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O21_O27_O28_stopCompletionAndANewPlayKeepBindings() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(8000, 9000) == ok)
      await session.run(for: .seconds(3))
      #expect(rig.video.state == .completed)
      #expect(rig.play(0, 1000) == ok)
      #expect(rig.video.state == .buffering)
      await session.run(for: .milliseconds(300))
      #expect(rig.replay.stop() == ok)
      #expect(rig.video.state == .idle)
      #expect(rig.audio.state == .idle)
      #expect(rig.video.core.binding != nil)
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.state == .rendering)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O22_O23_disposeNeverUnbindsImplicitly() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.video.dispose() == inUse)
      #expect(rig.audio.dispose() == inUse)
      #expect(rig.video.core.binding != nil)
      #expect(rig.video.detach() == ok)
      #expect(rig.video.dispose() == inUse)  // the view
      #expect(rig.video.detachView() == ok)
      #expect(rig.video.dispose() == ok)
      #expect(rig.video.attachView(rig.view) == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.video.detach() == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.audio.detach() == ok)
      #expect(rig.audio.dispose() == ok)
      #expect(rig.replay.dispose() == ok)
      #expect(rig.storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func O25_O26_D7_D8_D11_aReplayErrorFailsEveryOutputWithoutDidFail() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      session.service.failListings(with: .credentialsExpired)
      #expect(rig.play() == ok)
      await session.run(for: .seconds(1))
      #expect(
        rig.log.entries.filter { if case .error = $0 { true } else { false } } == [
          .error(TiCloudStorageErrorCode.tokenExpired)
        ])
      #expect(rig.video.state == .failed)
      #expect(rig.audio.state == .failed)
      #expect(!rig.log.entries.contains { if case .videoFailure = $0 { true } else { false } })
      // The expiry is known: a new play with that token is refused at once; a new token plays again (D10).
      #expect(rig.play() == TiCloudStorageErrorCode.tokenExpired)
      #expect(rig.storage.updateToken("device-token") == ok)
      #expect(rig.play() == TiCloudStorageErrorCode.tokenExpired)
      session.service.failListings(with: nil)
      #expect(rig.storage.updateToken("fresh-token") == ok)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.state == .rendering)
      #expect(session.service.tokens.withLock { $0.last } == "fresh-token")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O29_O30_O32_O33_R40_volumeIsTheOutputsOwnAndKept() async throws {
      let session = try SDKSession()
      let rig = ReplayRig(bindAudio: false)
      #expect(rig.audio.setVolume(30) == ok)  // before attach
      #expect(rig.audio.setVolume(101) == TiCloudStorageErrorCode.invalidArgument)
      #expect(rig.audio.attach(replay: rig.replay, channelId: 1) == ok)
      #expect(rig.play(0, 2000) == ok)
      await session.run(for: .milliseconds(500))
      #expect(Set(rig.device.played.map(\.volume)) == [30])
      #expect(rig.audio.setVolume(0) == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.device.played.last?.volume == 0)
      #expect(rig.audio.detach() == ok)
      #expect(rig.audio.attach(replay: rig.replay, channelId: 1) == ok)
      #expect(rig.replay.stop() == ok)
      #expect(rig.play(0, 2000) == ok)
      let count = rig.device.played.count
      await session.run(for: .milliseconds(300))
      #expect(rig.device.played.dropFirst(count).allSatisfy { $0.volume == 0 })
      // Off 1× the audio is muted (not played).
      #expect(rig.replay.setSpeed(.x2) == ok)
      let muted = rig.device.played.count
      await session.run(for: .milliseconds(300))
      #expect(rig.device.played.count == muted)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O34_O35_O36_O37_O39_theViewIsBorrowedOnlyBetweenAttachAndDetach() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let other = FrameCaptureRenderer()
      #expect(rig.video.attachView(rig.view) == ok)
      #expect(rig.video.attachView(other) == inUse)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(400))
      #expect(rig.video.detachView() == ok)
      let drawn = rig.view.renderedTimes.count
      #expect(drawn > 0)
      await session.run(for: .milliseconds(400))
      #expect(rig.view.renderedTimes.count == drawn)
      #expect(other.renderedTimes.isEmpty)
      // Without a view it still renders, and snapshots see its frames (O39).
      #expect(rig.video.state == .rendering)
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func renderSizeFollowsThePicturesAsInSeed002() async throws {
      // 320x240 for 3 s, then 160x120: seed 002's renderSize and didChangeRenderSize.
      let library = try resolutionChangeLibrary("tipipe-sdk-size")
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig(bindAudio: false)
      #expect(rig.video.renderSize == .zero)
      #expect(rig.play(0, 6000) == ok)
      await session.run(for: .milliseconds(500))
      #expect(rig.video.renderSize == CGSize(width: 320, height: 240))
      // After the state it explains, once for all the pictures of that size.
      #expect(rig.log.outputEntries == [.video(.buffering), .video(.rendering), .videoSize(320, 240)])
      await session.run(for: .seconds(7))
      #expect(rig.log.entries.contains(.completed))
      #expect(rig.video.renderSize == CGSize(width: 160, height: 120))
      #expect(rig.log.videoSizes == [[320, 240], [160, 120]])
      // A new play in the second part: pictures of the same size, no event; a seek into the first part
      // brings the first size again.
      #expect(rig.play(0, 6000, initial: 4000) == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.state == .rendering)
      #expect(rig.log.videoSizes == [[320, 240], [160, 120]])
      #expect(rig.replay.seek(toTimeMs: recordingStart + 1000) == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.renderSize == CGSize(width: 320, height: 240))
      #expect(rig.log.videoSizes == [[320, 240], [160, 120], [320, 240]])
      // Without a view the pictures still have their size (O39); detach has none.
      #expect(rig.video.detachView() == ok)
      #expect(rig.video.renderSize == CGSize(width: 320, height: 240))
      #expect(rig.video.detach() == ok)
      #expect(rig.video.renderSize == .zero)
      await session.drainMain()
      #expect(rig.log.videoSizes.last == [0, 0])
      #expect(rig.log.delegatesOnMain)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O40_C26_anOutputWhoseChannelCarriesNothingFailsWith6130After5sOfPlayback() async throws {
      let session = try SDKSession()
      let rig = ReplayRig(bindAudio: false)
      #expect(rig.audio.attach(replay: rig.replay, channelId: 7) == ok)  // audio is on channel 1
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .seconds(3))
      // Media time 0–4 s played (the hole at 3–4 s is skipped): not yet 5 s of audio of other channels.
      #expect(rig.audio.state == .buffering)
      await session.run(for: .seconds(2))
      #expect(rig.audio.state == .failed)
      #expect(rig.log.entries.contains(.audioFailure(6130)))
      #expect(TiCloudStorage.errorToString(6130) == "channelMismatch")
      // Only that Output: the video and the play go on.
      #expect(rig.video.state == .rendering)
      await session.run(for: .seconds(5))
      #expect(rig.log.entries.contains(.completed))
      #expect(!rig.log.entries.contains { if case .error = $0 { true } else { false } })
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func O9_O24_anOutputsOwnDecodeFailureFailsOnlyThatOutput() async throws {
      // G.711 stereo audio on channel 1; in the second object one record loses a byte (not a whole
      // sample), which libavcodec refuses: the audio Output's decoder fails there.
      let directory = try TemporaryDirectory("tipipe-sdk-o24")
      var options = smallOptions(seconds: 6)
      options.audioCodec = .g711a
      options.audioSampleRate = 8000
      options.audioChannels = 2
      try LibrarySynthesizer(options: options).write(to: directory.url)
      try LibraryFaults.rewriteRecords(segment: 1, in: directory.url) { records in
        var records = records
        let audio = records.indices.filter { records[$0].track.kind == .audio }
        records[audio[10]].payload = records[audio[10]].payload.dropLast()
        return records
      }
      let session = try SDKSession(library: directory.url)
      let rig = ReplayRig()
      #expect(rig.play(0, 6000) == ok)
      var waited = 0
      while rig.audio.state != .failed && waited < 70 {
        await session.run(for: .milliseconds(100))
        waited += 1
      }
      // A failed Output outputs nothing more (O9).
      let playedAtFailure = rig.device.played.count
      await session.run(for: .seconds(7))
      await session.drainMain()
      #expect(rig.device.played.count == playedAtFailure)
      // Only the audio Output failed, with the decoder's code, once.
      #expect(rig.log.entries.filter { $0 == .audioFailure(TiErrorCode.recordingUnreadable.rawValue) }.count == 1)
      #expect(rig.audio.state == .failed && rig.log.audioStates.last == .failed)
      #expect(!rig.log.entries.contains { if case .videoFailure = $0 { true } else { false } })
      // The video went on to the end, and the play completed without onError.
      #expect(rig.log.entries.contains(.completed))
      #expect(!rig.log.entries.contains { if case .error = $0 { true } else { false } })
      #expect(rig.view.renderedTimes.count == 150)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }
  }
}
