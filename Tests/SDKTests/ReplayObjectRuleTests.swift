import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

extension SDKRules {
  /// Rules.md group R, the parts that belong to the SDK object (the engine's are in ReplayTests).
  @Suite @MainActor struct ReplayObject {
    @Test func R1_R2_R3_R4_rawValues() {
      #expect(
        [TiCloudStorageReplaySpeed.x1, .x2, .x4, .x8, .x0_5, .x0_25, .x0_125].map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
      #expect([TiCloudStorageCallbackThread.main, .background].map(\.rawValue) == [0, 1])
      #expect([TiCloudStorageRecordingTrackKind.video, .audio].map(\.rawValue) == [1, 2])
      #expect(TiCloudStorageRecordingGapReason.allCases.map(\.rawValue) == Array(0...9))
      #expect(
        TiCloudStorageRecordingGapReason.allCases.map(\.name) == [
          "unknown", "notFound", "downloadFailed", "integrityFailed", "mediaUnreadable", "noKeyFrame", "noRecording",
          "decryptionFailed", "unsupportedMedia", "trackUnavailable",
        ])
    }

    @Test func R5_aReplayHasNoPublicInitializerAndPlaysWithItsOwnInstancesToken() async throws {
      // No public initializer in any declaration of the type (read from the sources, as F9's test does).
      let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TiCloudStorage/SDK")
      let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter {
        $0.hasPrefix("TiCloudStorageReplay") && $0.hasSuffix(".swift")
      }
      #expect(files.count >= 2)
      for file in files {
        let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
        let initializers = text.split(separator: "\n").filter {
          $0.range(of: #"^\s*(public|open)\s+((convenience|required)\s+)?init\b"#, options: .regularExpression) != nil
        }
        #expect(initializers.isEmpty, "\(file): \(initializers)")
      }
      // Made by one instance, it plays with that instance's token, whatever other instances come and go.
      let session = try SDKSession()
      let owner = TiCloudStorage(token: "owner-token")
      let replay = owner.createReplay()
      let view = FrameCaptureRenderer()
      let video = TiCloudStorageVideoOutput()
      #expect(video.attachView(view) == ok && video.attach(replay: replay, channelId: 0) == ok)
      let other = TiCloudStorage(token: "other-token")
      #expect(replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(other.dispose() == ok)
      #expect(replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 1000) == ok)
      await session.run(for: .seconds(2))
      let tokens = session.service.tokens.withLock { $0 }
      #expect(tokens.count >= 2 && tokens.allSatisfy { $0 == "owner-token" }, "\(tokens)")
      #expect(!view.renderedTimes.isEmpty)
      #expect(replay.stop() == ok && video.detach() == ok && video.detachView() == ok && video.dispose() == ok)
      #expect(replay.dispose() == ok && owner.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func R7_gapsAndErrorsOfABackgroundReplayComeOnTheSharedBackgroundQueue() async throws {
      let session = try SDKSession()
      let rig = ReplayRig(callbackThread: .background)
      let sharedQueue = DispatchSpecificKey<Bool>()
      Runtime.shared.background.setSpecific(key: sharedQueue, value: true)
      defer { Runtime.shared.background.setSpecific(key: sharedQueue, value: nil) }
      /// Each callback: which, on the main queue, on the shared background queue.
      let seen = Locked<[(String, Bool, Bool)]>([])
      let note = { @Sendable (name: String) in
        seen.withLock { $0.append((name, onMainQueue, DispatchQueue.getSpecific(key: sharedQueue) == true)) }
      }
      rig.replay.onRecordingGap = { _ in note("gap") }
      rig.replay.onError = { _ in note("error") }
      rig.replay.onCompleted = { note("completed") }
      // Across the recording's hole (3 s to 4 s), to its end; then a play whose listing fails.
      #expect(rig.play(2000, 5000) == ok)
      await session.run(for: .seconds(5))
      Runtime.shared.background.sync {}
      session.service.failListings(with: .serviceUnavailable)
      #expect(rig.play(0, 2000) == ok)
      await session.run(for: .seconds(1))
      Runtime.shared.background.sync {}
      let calls = seen.withLock { $0 }
      #expect(calls.map(\.0) == ["gap", "completed", "error"], "\(calls.map(\.0))")
      #expect(calls.allSatisfy { !$0.1 && $0.2 }, "a callback off the shared background queue")
      session.service.failListings(with: nil)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R5_R6_R7_R8_R9_aReplayBelongsToItsInstanceAndCallsBackOnItsQueue() async throws {
      let session = try SDKSession()
      let main = ReplayRig()
      let background = ReplayRig(callbackThread: .background)
      #expect(main.replay.instance === main.storage)
      #expect(main.replay.speed == .x1)
      #expect(main.replay.currentTimeMs == nil)
      #expect(main.play(0, 2000) == ok)
      #expect(background.play(0, 2000) == ok)
      await session.run(for: .seconds(3))
      Runtime.shared.background.sync {}
      await session.drainMain()
      let replayEvents = { (log: SDKLog) in
        zip(log.entries, log.onMainThread).filter {
          switch $0.0 {
          case .time, .completed, .gap, .error: true
          default: false
          }
        }.map(\.1)
      }
      #expect(!replayEvents(main.log).isEmpty && replayEvents(main.log).allSatisfy { $0 })
      #expect(!replayEvents(background.log).isEmpty && replayEvents(background.log).allSatisfy { !$0 })
      #expect(main.log.entries.contains(.completed) && background.log.entries.contains(.completed))
      #expect(main.tearDown().allSatisfy { $0 == ok })
      #expect(background.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R11_R12_R14_R29_millisecondsNoTimeCanHoldAreRefusedAtTheEdge() async throws {
      // The engine plays `MediaTime`s; the facade turns the seed's ms into them, and a value no time can
      // hold (beyond ±146,000 years) is invalidArgument there, changing nothing.
      let session = try SDKSession()
      let rig = ReplayRig()
      let start = recordingStart
      for (from, to, initial) in [
        (Int64.min, start + 1000, Int64?.none), (start, Int64.max, nil), (Int64.min, Int64.max, nil),
        (start, start + 1000, Int64.max), (start, start + 1000, Int64.min),
      ] {
        #expect(rig.replay.play(startTimeMs: from, endTimeMs: to, initialTimeMs: initial) == 6000, "\(from) \(to)")
      }
      #expect(rig.replay.pause() == 6027 && rig.replay.currentTimeMs == nil)  // no play began
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(500))
      let position = try #require(rig.replay.currentTimeMs)
      for target in [Int64.min, Int64.max, MediaTime.validMilliseconds.upperBound + 1] {
        #expect(rig.replay.seek(toTimeMs: target) == 6000, "\(target)")
      }
      await session.run(for: .milliseconds(100))
      // The play went on from where it was: no seek took effect.
      #expect((rig.replay.currentTimeMs ?? 0) >= position && rig.replay.pause() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R18_D5_aPlayKeepsItsTokenThroughSeeks() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      #expect(rig.storage.updateToken("later-token") == ok)
      await session.run(for: .milliseconds(200))
      #expect(rig.replay.seek(toTimeMs: recordingStart + 7000) == ok)
      await session.run(for: .milliseconds(200))
      #expect(session.service.tokens.withLock { Set($0) } == ["device-token"])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R75_R76_T10_disposeWaitsForThePlayTheOutputsAndTheTasks() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(200))
      let task = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      #expect(rig.replay.stop() == ok)
      #expect(rig.video.detach() == ok && rig.audio.detach() == ok)
      // The task finishes with the play's end, asynchronously: until then dispose waits.
      _ = try await session.pump { await task.stop() }
      #expect(rig.replay.dispose() == ok)
      #expect(
        rig.replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 10)
          == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.replay.seek(toTimeMs: recordingStart) == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.replay.startRecording(videoChannelId: 0).code == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == TiCloudStorageErrorCode.notInitialized)
      #expect(rig.video.detachView() == ok && rig.video.dispose() == ok && rig.audio.dispose() == ok)
      #expect(rig.storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func R55_R60_R61_R62_aListingFailureEndsThePlayOnceWithItsCode() async throws {
      let cases: [(MediaError.Kind, TiErrorCode)] = [
        (.credentialsExpired, .tokenExpired), (.accessDenied, .permissionDenied),
        (.serviceUnavailable, .cloudStorageUnavailable), (.networkUnavailable, .networkUnavailable),
        (.hostUnresolved, .endpointDnsResolutionFailed),
      ]
      for (kind, code) in cases {
        let session = try SDKSession()
        let rig = ReplayRig()
        session.service.failListings(with: kind)
        #expect(rig.play() == ok)
        await session.run(for: .seconds(1))
        #expect(rig.log.entries.filter { if case .error = $0 { true } else { false } } == [.error(code.rawValue)])
        #expect(rig.replay.pause() == TiCloudStorageErrorCode.notStarted)  // R26
        #expect(rig.tearDown().allSatisfy { $0 == ok })
        #expect(session.close() == ok)
      }
    }
  }
}
