import Dispatch
import Foundation
import MediaSynthesis
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

    @Test func Q24_theDefaultTimeZoneIsShanghaiInBothForms() async throws {
      // A minute at 2026-11-30T17:00Z: 2026-12-01T01:00 in Shanghai, still 2026-11-30 in UTC.
      let library = try TemporaryDirectory("tipipe-sdk-shanghai")
      var options = smallOptions(seconds: 2)
      options.startMilliseconds = 1_796_058_000_000
      try LibrarySynthesizer(options: options).write(to: library.url)
      let session = try SDKSession(library: library.url)
      let storage = TiCloudStorage(token: "a")
      let byDefault = try await session.pump {
        await storage.listRecordingDays(startDate: "2026-11-30", endDate: "2026-12-01")
      }
      #expect(byDefault.code == ok && byDefault.days.map(\.hasRecording) == [false, true])
      var completed: TiCloudStorageRecordingDaysResult?
      storage.listRecordingDays(startDate: "2026-11-30", endDate: "2026-12-01") { completed = $0 }
      await session.drainMain { completed != nil }
      #expect(completed?.code == ok && completed?.days.map(\.hasRecording) == [false, true])
      let utc = try await session.pump {
        await storage.listRecordingDays(startDate: "2026-11-30", endDate: "2026-12-01", timeZoneId: "UTC")
      }
      #expect(utc.code == ok && utc.days.map(\.hasRecording) == [true, false])
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func Q13_Q19_D11_D16_everyOutcomeOfTheCompletionFormsAndWhatFailedListsHold() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      final class Box: @unchecked Sendable {
        var returned = false
        /// Each delivery: code, count of recordings or days, on main, after the call returned.
        var results: [(Int32, Int, Bool, Bool)] = []
      }
      /// Both completion forms once, then both async forms; the codes and what the lists held.
      func listAll() async throws -> [(Int32, Int, Bool, Bool)] {
        let box = Box()
        storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) { result in
          box.results.append((result.code, result.recordings.count, onMainQueue, box.returned))
        }
        storage.listRecordingDays(startDate: "2026-11-29", endDate: "2026-12-01", timeZoneId: "UTC") { result in
          box.results.append((result.code, result.days.count, onMainQueue, box.returned))
        }
        box.returned = true
        #expect(box.results.isEmpty, "a completion inside the call")
        await session.drainMain { box.results.count >= 2 }
        let ranges = try await session.pump { await storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }
        let days = try await session.pump {
          await storage.listRecordingDays(startDate: "2026-11-29", endDate: "2026-12-01", timeZoneId: "UTC")
        }
        #expect(box.results.count == 2, "each completion once")
        #expect(box.results.allSatisfy { $0.2 && $0.3 }, "on the main queue, after the call")
        return box.results + [
          (ranges.code, ranges.recordings.count, true, true), (days.code, days.days.count, true, true),
        ]
      }
      // A failure of the service: its code, and empty lists (Q19).
      session.service.failListings(with: .serviceUnavailable)
      let failed = try await listAll()
      #expect(failed.allSatisfy { $0.0 != ok && $0.1 == 0 }, "\(failed)")
      // An expired token: 6014 in the result; known from then on, lists fail without asking the service
      // (D11) — though the service would answer now — and the same token installed again changes nothing.
      session.service.failListings(with: .credentialsExpired)
      let expired = try await listAll()
      #expect(expired.allSatisfy { $0.0 == TiCloudStorageErrorCode.tokenExpired && $0.1 == 0 }, "\(expired)")
      session.service.failListings(with: nil)
      let asked = session.service.tokens.withLock { $0.count }
      #expect(try await listAll().allSatisfy { $0.0 == TiCloudStorageErrorCode.tokenExpired && $0.1 == 0 })
      #expect(storage.updateToken("a") == ok)
      #expect(try await listAll().allSatisfy { $0.0 == TiCloudStorageErrorCode.tokenExpired })
      #expect(session.service.tokens.withLock { $0.count } == asked, "the service was asked with a known-expired token")
      // Another token: asked again, with it.
      #expect(storage.updateToken("b") == ok)
      let listed = try await listAll()
      #expect(listed.allSatisfy { $0.0 == ok && $0.1 > 0 }, "\(listed)")
      #expect(session.service.tokens.withLock { $0.count > asked && $0.dropFirst(asked).allSatisfy { $0 == "b" } })
      // Disposed: notInitialized through every form (D16), still never inside the call (Q13).
      #expect(storage.dispose() == ok)
      let disposed = try await listAll()
      #expect(disposed.allSatisfy { $0.0 == TiCloudStorageErrorCode.notInitialized && $0.1 == 0 }, "\(disposed)")
      #expect(session.close() == ok)
    }

    @Test func Q14_aQueryKeepsTheTokenItStartedWith() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "a")
      // A month of days: four listings one after the other; the token changes right after the call.
      var result: TiCloudStorageRecordingDaysResult?
      storage.listRecordingDays(startDate: "2026-11-01", endDate: "2026-12-01", timeZoneId: "UTC") { result = $0 }
      #expect(storage.updateToken("b") == ok)
      await session.drainMain { result != nil }
      #expect(result?.code == ok && result?.days.count == 31)
      let tokens = session.service.tokens.withLock { $0 }
      #expect(tokens.count >= 4 && tokens.allSatisfy { $0 == "a" }, "\(tokens)")
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func D4_aNewTokenIsUsedByEveryListPlayAndExportStartedAfterIt() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(rig.storage.updateToken("fresh") == ok)
      let before = session.service.tokens.withLock { $0.count }
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      let (export, log) = session.startExport(
        rig.storage,
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 2000, videoChannelId: 0, audioChannelId: 1))
      #expect(export.code == ok)
      await session.finish(log)
      #expect(log.result?.code == ok)
      #expect(
        try await session.pump { await rig.storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1) }.code == ok
      )
      let after = session.service.tokens.withLock { Array($0.dropFirst(before)) }
      #expect(after.count >= 3 && after.allSatisfy { $0 == "fresh" }, "\(after)")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func L5_aTaskDroppedByItsCallerStillDeliversItsCompletion() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      // An export whose task and start result the caller lets go of at once.
      let exported = Locked<[Int32]>([])
      var export: TiCloudStorageExportTaskStartResult? = rig.storage.exportRecording(
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 2000, videoChannelId: 0, audioChannelId: 1),
        progress: nil
      ) { result in exported.withLock { $0.append(result.code) } }
      weak let exportTask = export?.task
      export = nil
      // A recording task let go of right after its stop was asked for.
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      var recording: TiCloudStorageRecordingTask? = rig.replay.startRecording(videoChannelId: 0).task
      await session.run(for: .milliseconds(2500))
      let recorded = Locked<[Int32]>([])
      recording?.stop { result in recorded.withLock { $0.append(result.code) } }
      weak let recordingTask = recording
      recording = nil
      try await session.run(until: "the dropped tasks' completions") {
        exported.withLock { !$0.isEmpty } && recorded.withLock { !$0.isEmpty }
      }
      await session.drainMain()
      #expect(exported.withLock { $0 } == [ok] && recorded.withLock { $0 } == [ok])
      // Delivered, they are let go of in turn (an ended recording task once another starts or its Replay
      // is disposed).
      #expect(exportTask == nil && recordingTask != nil)
      #expect(rig.play() == ok)
      let next = rig.replay.startRecording(videoChannelId: 0)
      #expect(next.code == ok)
      // Let go of once what was queued for it ran (a loaded machine may still hold the block that
      // delivered its completion).
      try await session.run(until: "the ended recording task let go of") { recordingTask == nil }
      _ = await next.task?.stop()
      #expect(rig.tearDown().allSatisfy { $0 == ok })
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
