import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

extension SDKRules {
  /// Rules.md groups D and the Q rules of delivery (Q12, Q13, Q28): the device instance.
  @Suite @MainActor struct Device {
    private let day = recordingStart
    private let whole = (recordingStart, recordingStart + 9000)

    @Test func D1_D3_instancesAreIndependent() async throws {
      let session = try SDKSession()
      let first = TiCloudStorage(token: "a")
      let second = TiCloudStorage(token: "b")
      #expect(first.updateToken("c") == ok)
      #expect(first.dispose() == ok)
      #expect(
        try await session.pump { await second.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == ok)
      #expect(second.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func D2_anEmptyTokenRefusesListPlayAndExport() async throws {
      let session = try SDKSession()
      let empty = TiCloudStorage(token: "")
      let replay = empty.createReplay()
      let video = TiCloudStorageVideoOutput()
      let view = FrameCaptureRenderer()
      #expect(video.attachView(view) == ok)
      // Bound, so that the refusal is the token's, not notBound's.
      #expect(video.attach(replay: replay, channelId: 0) == ok)
      let asked = session.service.tokens.withLock { $0.count }
      let invalid = TiCloudStorageErrorCode.invalidArgument
      // Play: refused synchronously, nothing plays.
      #expect(replay.play(startTimeMs: whole.0, endTimeMs: whole.1) == invalid)
      await session.run(for: .milliseconds(300))
      #expect(view.renderedTimes.isEmpty && video.state == .idle)
      // List, both forms, and the days.
      #expect(
        try await session.pump { await empty.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == invalid)
      let results = Locked<[(Int32, Bool)]>([])
      empty.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) { result in
        results.withLock { $0.append((result.code, onMainQueue)) }
      }
      await session.drainMain { results.withLock { !$0.isEmpty } }
      #expect(results.withLock { $0.map(\.0) } == [invalid])
      #expect(results.withLock { $0.allSatisfy(\.1) })
      let days = try await session.pump {
        await empty.listRecordingDays(startDate: "2026-12-01", endDate: "2026-12-02")
      }
      #expect(days.code == invalid && days.days.isEmpty)
      // Export: a valid request, refused synchronously, nothing delivered, nothing written.
      let request = TiCloudStorageExportRequest(
        startTimeMs: whole.0, endTimeMs: whole.0 + 2000, videoChannelId: 0, audioChannelId: 1)
      let (start, log) = session.startExport(empty, request)
      #expect(start.code == invalid && start.task == nil)
      await session.drainMain()
      #expect(log.events.isEmpty)
      let awaited = await empty.exportRecording(request)
      #expect(awaited.code == invalid && awaited.file == nil)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      // Nothing reached the service.
      #expect(session.service.tokens.withLock { $0.count } == asked)
      // The token was the reason: with one, the same calls go through.
      #expect(empty.updateToken("device-token") == ok)
      #expect(replay.play(startTimeMs: whole.0, endTimeMs: whole.1) == ok)
      #expect(
        try await session.pump { await empty.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == ok)
      let (accepted, acceptedLog) = session.startExport(empty, request)
      #expect(accepted.code == ok && accepted.task != nil)
      await session.finish(acceptedLog)
      #expect(acceptedLog.result?.code == ok)
      #expect(replay.stop() == ok)
      #expect(video.detach() == ok)
      #expect(video.detachView() == ok)
      #expect(video.dispose() == ok)
      #expect(replay.dispose() == ok)
      #expect(empty.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func D4_D6_D16_updateTokenRules() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      #expect(storage.updateToken("b") == ok)
      #expect(storage.updateToken("") == TiCloudStorageErrorCode.invalidArgument)
      #expect(
        try await session.pump { await storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == ok)
      // D6: the empty token was not stored: the listing went out with "b".
      #expect(session.service.tokens.withLock { $0.last } == "b")
      #expect(storage.dispose() == ok)
      #expect(storage.updateToken("c") == TiCloudStorageErrorCode.notInitialized)
      #expect(
        await storage.listRecordingDays(startDate: "2026-12-01", endDate: "2026-12-02").code
          == TiCloudStorageErrorCode.notInitialized)
      #expect(session.close() == ok)
    }

    @Test func D12_D13_createReplayGivesDistinctReplaysAndADisposedInstanceDeadOnes() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      let first = storage.createReplay()
      let second = storage.createReplay(callbackThread: .background)
      #expect(first !== second)
      #expect(first.callbackThread == .main)
      #expect(second.callbackThread == .background)
      #expect(first.dispose() == ok)
      #expect(second.dispose() == ok)
      #expect(storage.dispose() == ok)
      let late = storage.createReplay()
      #expect(late.setSpeed(.x2) == TiCloudStorageErrorCode.notInitialized)
      #expect(session.close() == ok)
    }

    @Test func D14_D15_disposeWaitsForReplaysAndQueriesAndStaysUsable() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      let replay = storage.createReplay()
      #expect(storage.dispose() == TiCloudStorageErrorCode.inUse)
      #expect(
        try await session.pump { await storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == ok)
      #expect(replay.dispose() == ok)
      var delivered = false
      storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) { _ in delivered = true }
      #expect(storage.dispose() == TiCloudStorageErrorCode.inUse)
      await session.drainMain()
      #expect(delivered)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func Q12_Q13_Q28_L3_L4_L29_listsCompleteOnceOnTheMainQueueNeverInsideTheCall() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      final class Box: @unchecked Sendable {
        var returned = false
        var results: [(Int32, Bool, Bool)] = []
      }
      let box = Box()
      storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) { result in
        box.results.append((result.code, onMainQueue, box.returned))
      }
      // Argument errors too come only through the completion.
      storage.listRecordings(startTimeMs: whole.1, endTimeMs: whole.0) { result in
        box.results.append((result.code, onMainQueue, box.returned))
      }
      storage.listRecordingDays(startDate: "2026-2-3", endDate: "2026-02-04") { result in
        box.results.append((result.code, onMainQueue, box.returned))
      }
      storage.listRecordingDays(startDate: "2026-12-01", endDate: "2026-12-03", timeZoneId: "UTC") { result in
        box.results.append((result.code, onMainQueue, box.returned))
      }
      box.returned = true
      await session.drainMain { box.results.count >= 4 }
      let results = box.results
      #expect(results.count == 4)
      #expect(Set(results.map(\.0)) == [ok, TiCloudStorageErrorCode.invalidArgument])
      #expect(results.allSatisfy { $0.1 && $0.2 })
      let async = try await session.pump {
        let result = await storage.listRecordingDays(startDate: "2026-12-01", endDate: "2026-12-03", timeZoneId: "UTC")
        MainActor.assertIsolated()
        return result
      }
      #expect(async.code == ok)
      #expect(async.days.count == 3)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func L5_completionsAreKeptAliveUntilDelivered() async throws {
      let session = try SDKSession()
      final class Witness: Sendable {}
      weak var witness: Witness?
      let delivered = Locked(false)
      do {
        let storage = TiCloudStorage(token: "a")
        let kept = Witness()
        witness = kept
        storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) { _ in
          _ = kept
          delivered.withLock { $0 = true }
        }
        _ = storage  // the instance itself is dropped by the caller
      }
      #expect(witness != nil)
      await session.drainMain()
      #expect(delivered.withLock { $0 })
      _ = session.close()
    }
  }
}
