import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

/// Everything one export delivered, in order.
final class ExportLog: @unchecked Sendable {
  enum Event {
    case progress(Double, onMain: Bool)
    case detail(Double, Int64)
    case gap(TiCloudStorageRecordingGap)
    case completion(TiCloudStorageExportResult, onMain: Bool)
  }
  let lock = NSLock()
  private var storage: [Event] = []
  var returned = false
  var calledBeforeReturn = false

  func append(_ event: Event) {
    lock.withLock {
      if !returned { calledBeforeReturn = true }
      storage.append(event)
    }
  }
  var events: [Event] { lock.withLock { storage } }
  var result: TiCloudStorageExportResult? {
    events.compactMap { if case .completion(let result, _) = $0 { result } else { nil } }.first
  }
  var completions: Int { events.count { if case .completion = $0 { true } else { false } } }
  var progress: [Double] { events.compactMap { if case .progress(let value, _) = $0 { value } else { nil } } }
  var details: [(Double, Int64)] { events.compactMap { if case .detail(let f, let c) = $0 { (f, c) } else { nil } } }
  var gaps: [TiCloudStorageRecordingGap] { events.compactMap { if case .gap(let gap) = $0 { gap } else { nil } } }
}

extension SDKSession {
  /// Starts a detailed export and records what it delivers.
  func startExport(
    _ storage: TiCloudStorage, _ request: TiCloudStorageExportRequest, thread: TiCloudStorageCallbackThread = .main
  ) -> (TiCloudStorageExportTaskStartResult, ExportLog) {
    let log = ExportLog()
    let start = storage.exportRecording(
      request, progress: { log.append(.progress($0, onMain: onMainQueue)) },
      progressDetail: { log.append(.detail($0.fraction, $0.coveredDurationMs)) },
      onRecordingGap: { log.append(.gap($0)) }, callbackThread: thread,
      completion: { log.append(.completion($0, onMain: onMainQueue)) })
    log.lock.withLock { log.returned = true }
    return (start, log)
  }

  /// Cranks the library's executor and the main queue until `log` has its completion.
  func finish(_ log: ExportLog, thread: TiCloudStorageCallbackThread = .main) async {
    let deadline = ContinuousClock.now + testDeadline
    while log.completions == 0 {
      guard ContinuousClock.now < deadline else {
        Issue.record(WaitTimedOut("an export's completion"))
        return
      }
      await drainMain()
      if thread == .background { Runtime.shared.background.sync {} }
    }
    await drainMain()
  }
}

private func request(_ from: Int64 = 0, _ to: Int64 = 9000, video: Int = 0, audio: Int? = 1)
  -> TiCloudStorageExportRequest
{
  TiCloudStorageExportRequest(
    startTimeMs: recordingStart + from, endTimeMs: recordingStart + to, videoChannelId: video, audioChannelId: audio)
}

extension SDKRules {
  /// Rules.md group E: ExportTask.
  @Suite @MainActor struct Exports {
    @Test func E1_terminationRawValues() {
      #expect(
        [TiCloudStorageExportTermination.exhausted, .interrupted, .cancelled, .failed].map(\.rawValue) == [0, 1, 2, 3])
    }

    @Test func E8_theSimpleOverloadDeliversProgressAndItsResultOnTheMainQueue() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let progress = Locked<[(Double, Bool)]>([])
      let results = Locked<[(TiCloudStorageRecordingResult, Bool)]>([])
      let lateProgress = Locked(false)
      // A detailed export with its callbacks off the main queue at the same time (E9): the simple one's
      // stay on it.
      let (background, backgroundLog) = session.startExport(storage, request(0, 3000), thread: .background)
      #expect(background.code == ok)
      let start = storage.exportRecording(
        request(0, 9000),
        progress: { value in
          if results.withLock({ !$0.isEmpty }) { lateProgress.withLock { $0 = true } }
          progress.withLock { $0.append((value, onMainQueue)) }
        }
      ) { result in results.withLock { $0.append((result, onMainQueue)) } }
      #expect(start.code == ok)
      let task = try #require(start.task)
      #expect(progress.withLock { $0.isEmpty } && results.withLock { $0.isEmpty })  // E5
      await session.drainMain { results.withLock { !$0.isEmpty } }
      await session.finish(backgroundLog, thread: .background)
      await session.drainMain()
      let delivered = results.withLock { $0 }
      #expect(delivered.count == 1 && delivered.allSatisfy(\.1))
      let values = progress.withLock { $0 }
      #expect(!values.isEmpty && values.allSatisfy(\.1))
      #expect(values.map(\.0).allSatisfy { (0...1).contains($0) })
      #expect(values.map(\.0) == values.map(\.0).sorted())
      #expect(values.last?.0 == 1.0)
      #expect(!lateProgress.withLock { $0 })
      #expect(task.progress == 1.0)
      // The detailed export's callbacks ran off the main queue.
      #expect(backgroundLog.events.allSatisfy { if case .completion(_, let main) = $0 { !main } else { true } })
      let result = try #require(delivered.first?.0)
      #expect(result.code == ok)
      let file = try #require(result.file)
      #expect(file.durationMs == 8000)  // 9 s with the fixture's 1 s hole
      #expect(URL(fileURLWithPath: file.path).deletingLastPathComponent().standardized == session.media.standardized)
      let codecs = try run(
        "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file.path])
      #expect(codecs.split(separator: "\n").sorted() == ["aac", "h264"])
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E3_E5_E11_E12_E13_E14_E15_E16_E17_E18_E20_E22_E26_E27_E30_E37_E39_E41_aFullExportAndItsReport()
      async throws
    {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let (start, log) = session.startExport(storage, request())
      #expect(start.code == ok)
      let task = try #require(start.task)
      #expect(task.report == nil)  // E45
      #expect(storage.dispose() == TiCloudStorageErrorCode.inUse)  // E40
      await session.finish(log)
      #expect(!log.calledBeforeReturn)
      #expect(log.completions == 1)
      guard case .completion(let result, let onMain) = log.events.last else {
        Issue.record("the completion is not the last callback")
        return
      }
      #expect(onMain)
      #expect(result.code == ok)
      let file = try #require(result.file)
      let report = try #require(result.report)
      // Progress: bounded, monotonic, 1.0 at the end of an exhausted scan; detail agrees.
      #expect(log.progress.allSatisfy { (0...1).contains($0) })
      #expect(log.progress == log.progress.sorted())
      #expect(log.progress.last == 1.0)
      #expect(log.details.map(\.0) == log.progress)
      #expect(log.details.map(\.1) == log.details.map(\.1).sorted())
      #expect(log.details.last?.1 == report.coveredDurationMs)
      #expect(task.progress == 1.0)
      #expect(task.report?.coveredDurationMs == report.coveredDurationMs)
      // The report: the requested range, the hole as a gap, segments closed up, everything covered once.
      #expect(
        report.requestedRange.startTimeMs == recordingStart && report.requestedRange.endTimeMs == recordingStart + 9000)
      #expect(report.termination == .exhausted && report.cause == ok)
      #expect(!report.complete)
      #expect(
        report.gaps.contains { $0.reasons.contains(.noRecording) && $0.range.startTimeMs == recordingStart + 3000 })
      #expect(report.segments.first?.outputStartMs == 0)
      for (previous, next) in zip(report.segments, report.segments.dropFirst()) {
        #expect(next.outputStartMs == previous.outputEndMs)
      }
      #expect(
        report.segments.reduce(0) { $0 + $1.sourceRange.endTimeMs - $1.sourceRange.startTimeMs }
          == report.coveredDurationMs)
      var pieces = report.segments.map { ($0.sourceRange.startTimeMs, $0.sourceRange.endTimeMs) }
      pieces += report.gaps.map { ($0.range.startTimeMs, $0.range.endTimeMs) }
      pieces += report.unprocessedRanges.map { ($0.startTimeMs, $0.endTimeMs) }
      pieces.sort { $0 < $1 }
      #expect(pieces.first?.0 == recordingStart && pieces.last?.1 == recordingStart + 9000)
      // Every gap of the report came through onRecordingGap first (E30).
      #expect(log.gaps.map(\.range.description) == report.gaps.map(\.range.description))
      // An independent judge opens the file (E18, F10).
      let probe = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "format=duration:stream=codec_name", "-of", "csv=p=0", file.path])
      #expect(probe.contains("h264") && probe.contains("aac"))
      #expect(
        URL(fileURLWithPath: file.path).deletingLastPathComponent().standardizedFileURL
          == session.media.standardizedFileURL)
      #expect(abs(file.durationMs - report.coveredDurationMs) <= 40)
      // A second export is its own file (E41); the simple overload reports the same outcome (E10).
      var simple: TiCloudStorageRecordingResult?
      let second = storage.exportRecording(request(), progress: nil) { simple = $0 }
      #expect(second.code == ok)
      await session.drainMain { simple != nil }
      #expect(simple?.code == result.code)
      #expect(simple?.file?.path != file.path)
      #expect(simple?.file.map { FileManager.default.fileExists(atPath: $0.path) } == true)
      // After the end, cancel and stop change nothing (E37, E38): the same report, the file kept, no
      // second completion.
      #expect(task.cancel() == ok && task.stop() == ok)
      #expect(task.report?.termination == .exhausted)
      await session.drainMain()
      #expect(log.completions == 1)
      #expect(FileManager.default.fileExists(atPath: file.path))
      // The task's own progressDetail agrees with the callbacks' last one (E12).
      #expect(task.progressDetail.fraction == log.progress.last)
      #expect(task.progressDetail.coveredDurationMs == task.report?.coveredDurationMs)
      #expect(storage.dispose() == ok)  // E39
      #expect(session.close() == ok)
    }

    @Test func E4_E6_refusedStartsCallNothingBack() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      for bad in [request(9000, 0), request(video: 256), request(video: -1), request(audio: 300)] {
        let (start, log) = session.startExport(storage, bad)
        #expect(start.code == TiCloudStorageErrorCode.invalidArgument)
        #expect(start.task == nil)
        await session.drainMain()
        #expect(log.events.isEmpty)
      }
      #expect(storage.dispose() == ok)
      let (late, _) = session.startExport(storage, request())
      #expect(late.code == TiCloudStorageErrorCode.notInitialized && late.task == nil)  // D16
      #expect(session.close() == ok)
    }

    @Test func E7_beyondTheLimitAnExportIsRefusedAtStart() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      var logs: [ExportLog] = []
      for _ in 0..<TiCloudStorage.maximumConcurrentExports {
        let (start, log) = session.startExport(storage, request(0, 2000))
        #expect(start.code == ok)
        logs.append(log)
      }
      let (refused, refusedLog) = session.startExport(storage, request(0, 2000))
      #expect(refused.code == TiCloudStorageErrorCode.resourceExhausted && refused.task == nil)
      for log in logs { await session.finish(log) }
      #expect(refusedLog.events.isEmpty)
      #expect(session.startExport(storage, request(0, 1000)).0.code == ok)
      _ = session.close()
    }

    @Test func E9_theDetailedOverloadCanUseTheBackgroundQueue() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let (start, log) = session.startExport(storage, request(0, 2000), thread: .background)
      #expect(start.code == ok)
      await session.finish(log, thread: .background)
      #expect(
        log.events.allSatisfy {
          switch $0 {
          case .progress(_, let main), .completion(_, let main): !main
          default: true
          }
        })
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E3_E10_E32_anAwaitedExportReturnsItsResultAndCancellingItsTaskCancelsIt() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let gaps = LockedArray<String>()
      let result = try await session.pump {
        await storage.exportRecording(request(), onRecordingGap: { gaps.append($0.range.description) })
      }
      #expect(result.code == ok)
      let file = try #require(result.file)
      #expect(FileManager.default.fileExists(atPath: file.path))
      #expect(result.report?.termination == .exhausted)
      #expect(gaps.values == result.report?.gaps.map(\.range.description))
      // A refused export (a valid request without a token, D2) returns at once with its code.
      let unauthorized = TiCloudStorage(token: "")
      let refused = await unauthorized.exportRecording(
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 2000, videoChannelId: 0, audioChannelId: nil))
      #expect(refused.code == TiCloudStorageErrorCode.invalidArgument)
      #expect(refused.file == nil && refused.report == nil)
      // Cancelling the awaiting task cancels the export: no file.
      let before = try FileManager.default.contentsOfDirectory(atPath: session.media.path).count
      let awaiting = Task { @MainActor in await storage.exportRecording(request()) }
      awaiting.cancel()
      let cancelled = try await session.pump { await awaiting.value }
      #expect(cancelled.code == TiCloudStorageErrorCode.cancelled)
      #expect(cancelled.file == nil && cancelled.report?.termination == .cancelled)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).count == before)
      #expect(storage.dispose() == ok && unauthorized.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E14_E32_E33_E34_E35_E36_E38_cancelAndStopLeaveNoFile() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      for (stop, code) in [(false, TiCloudStorageErrorCode.cancelled), (true, TiCloudStorageErrorCode.stopped)] {
        let (start, log) = session.startExport(storage, request())
        let task = try #require(start.task)
        #expect(stop ? task.stop() == ok : task.cancel() == ok)
        #expect(task.cancel() == ok)
        await session.finish(log)
        let result = try #require(log.result)
        #expect(result.code == code)
        #expect(result.file == nil)
        #expect(result.report?.termination == .cancelled)
        #expect(log.completions == 1)
        // E14: the range was not scanned to its end, so neither the callbacks nor the task say 1.0.
        #expect(log.progress.allSatisfy { $0 < 1 } && task.progress < 1 && task.progressDetail.fraction < 1)
      }
      let leftovers = try FileManager.default.contentsOfDirectory(atPath: session.media.path)
      #expect(leftovers.isEmpty)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E41_endingOneExportLeavesAnotherAsItWas() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      var files: [String] = []
      for stop in [false, true] {
        // Two exports of the same range at once; one is ended before either has run.
        let (ended, endedLog) = session.startExport(storage, request())
        let (other, otherLog) = session.startExport(storage, request())
        #expect(ended.code == ok && other.code == ok)
        let task = try #require(ended.task)
        #expect(stop ? task.stop() == ok : task.cancel() == ok)
        await session.finish(endedLog)
        await session.finish(otherLog)
        #expect(endedLog.result?.file == nil && endedLog.result?.report?.termination == .cancelled)
        let result = try #require(otherLog.result)
        #expect(result.code == ok && result.report?.termination == .exhausted)
        #expect(otherLog.progress.last == 1.0 && other.task?.progress == 1.0)
        let file = try #require(result.file)
        #expect(file.durationMs == 8000)  // 9 s with the fixture's 1 s hole
        let probe = try run(
          "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file.path])
        #expect(probe.split(separator: "\n").sorted() == ["aac", "h264"])
        files.append(URL(fileURLWithPath: file.path).lastPathComponent)
      }
      // Each its own file in the cache's media folder, and nothing of the ended ones.
      #expect(Set(files).count == 2)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).sorted() == files.sorted())
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E2_D5_anExportKeepsTheTokenItStartedWith() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "first")
      let (start, log) = session.startExport(storage, request(0, 2000))
      #expect(start.code == ok)
      #expect(storage.updateToken("second") == ok)
      await session.finish(log)
      #expect(log.result?.code == ok)
      #expect(session.service.tokens.withLock { Set($0) } == ["first"])
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E14_E42_D11_aTokenThatExpiresDuringAnExportIsItsCauseOrItsCode() async throws {
      // After media was written: the export ends with what it wrote, the expiry as the report's cause.
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "first")
      // Two listings succeed (the window and the look-back before it); the objects from 3 s on are
      // refused, so the export lists again, and that listing finds the token expired.
      session.service.failListings(after: 2, with: .credentialsExpired)
      session.service.refuseURLs(from: recordingStart + 3000)
      let (start, log) = session.startExport(storage, request(0, 9000))
      #expect(start.code == ok)
      await session.finish(log)
      let result = try #require(log.result)
      #expect(result.code == ok)
      let file = try #require(result.file)
      let report = try #require(result.report)
      #expect(report.termination == .interrupted && report.cause == TiCloudStorageErrorCode.tokenExpired)
      #expect(!report.complete)
      // E14: interrupted before the end of its range, it never reported 1.0 (it did report some progress).
      #expect(!log.progress.isEmpty && log.progress.allSatisfy { $0 < 1 })
      #expect(try #require(start.task).progress < 1)
      #expect(report.unprocessedRanges.last?.endTimeMs == recordingStart + 9000)
      #expect(report.coveredDurationMs > 0 && report.coveredDurationMs <= 3000)
      // Listed with the token it started with: twice with success, then again for the refused objects.
      let asked = session.service.tokens.withLock { $0 }
      #expect(asked.count >= 3 && Set(asked) == ["first"], "\(asked)")
      let codecs = try run(
        "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file.path])
      #expect(codecs.contains("h264"))
      // Known expired now: refused at once (D11).
      #expect(session.startExport(storage, request(0, 2000)).0.code == TiCloudStorageErrorCode.tokenExpired)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)

      // During the export with nothing usable written: the completion's code, and no file.
      let second = try SDKSession()
      let other = TiCloudStorage(token: "first")
      second.service.failListings(after: 2, with: .credentialsExpired)
      second.service.refuseURLs(from: recordingStart)
      let (failing, failed) = second.startExport(other, request(0, 9000))
      #expect(failing.code == ok)
      await second.finish(failed)
      let ended = try #require(failed.result)
      #expect(ended.code == TiCloudStorageErrorCode.tokenExpired && ended.file == nil)
      #expect(ended.report?.termination == .failed)
      #expect(ended.report?.cause == TiCloudStorageErrorCode.tokenExpired)
      #expect(try FileManager.default.contentsOfDirectory(atPath: second.media.path).isEmpty)
      // The first two listings succeeded: it expired during the export, not before it.
      #expect(second.service.tokens.withLock { $0.count } >= 3)
      #expect(other.dispose() == ok)
      #expect(second.close() == ok)
    }

    /// Linux addition: `outputPath` puts the MP4 where the caller says (`tipipe export --out`), under a
    /// temporary name beside it until it is complete; a path that is not a missing or regular file is
    /// refused at start and nothing on disk changes.
    @Test func E3_E4_E6_anOutputPathReceivesTheFileAndIsCheckedAtStart() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let folder = FileManager.default.temporaryDirectory.appendingPathComponent("out-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(at: folder) }
      let destination = folder.appendingPathComponent("clip.mp4")
      #expect(FileManager.default.createFile(atPath: destination.path, contents: Data("old".utf8)))
      func to(_ path: String) -> TiCloudStorageExportRequest {
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 9000, videoChannelId: 0, audioChannelId: 1,
          outputPath: path)
      }
      // A directory, a FIFO and an empty path are refused without a callback; nothing changes.
      let fifo = folder.appendingPathComponent("fifo").path
      #expect(mkfifo(fifo, 0o600) == 0)
      for bad in [folder.path, fifo, ""] {
        let (start, log) = session.startExport(storage, to(bad))
        #expect(start.code == TiCloudStorageErrorCode.invalidArgument && start.task == nil)
        await session.drainMain()
        #expect(log.events.isEmpty)
      }
      // A cancelled export leaves the old file as it was and no temporary file.
      let (cancelled, cancelledLog) = session.startExport(storage, to(destination.path))
      #expect(cancelled.task?.cancel() == ok)
      await session.finish(cancelledLog)
      #expect(cancelledLog.result?.file == nil)
      #expect(try Data(contentsOf: destination) == Data("old".utf8))
      // A finished one replaces it; the result names it; only it and the FIFO are in the folder.
      let (start, log) = session.startExport(storage, to(destination.path))
      #expect(start.code == ok)
      await session.finish(log)
      let file = try #require(log.result?.file)
      #expect(file.path == destination.path)
      let probe = try run(
        "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file.path])
      #expect(probe.contains("h264") && probe.contains("aac"))
      #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["clip.mp4", "fifo"])
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func E43_E44_E46_nothingWritableAnUnwritableCacheAndATooLargeRange() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let (none, noneLog) = session.startExport(storage, request(video: 7, audio: nil))
      #expect(none.code == ok)
      await session.finish(noneLog)
      #expect(noneLog.result?.code == TiCloudStorageErrorCode.noRecordableMedia && noneLog.result?.file == nil)
      // A range inside the recording's hole (3 s to 4 s) holds nothing either.
      let (hole, holeLog) = session.startExport(storage, request(3100, 3900))
      #expect(hole.code == ok)
      await session.finish(holeLog)
      #expect(holeLog.result?.code == TiCloudStorageErrorCode.noRecordableMedia && holeLog.result?.file == nil)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      let (large, largeLog) = session.startExport(
        storage,
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 864_000_001, videoChannelId: 0))
      #expect(large.code == ok)
      await session.finish(largeLog)
      #expect(largeLog.result?.code == TiCloudStorageErrorCode.rangeTooLarge && largeLog.result?.file == nil)
      try FileManager.default.removeItem(at: session.media)
      #expect(FileManager.default.createFile(atPath: session.media.path, contents: Data("x".utf8)))
      let (unwritable, unwritableLog) = session.startExport(storage, request(0, 2000))
      #expect(unwritable.code == ok)
      await session.finish(unwritableLog)
      #expect(unwritableLog.result?.code == TiCloudStorageErrorCode.fileWriteFailed)
      #expect(try Data(contentsOf: session.media) == Data("x".utf8))
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }
  }
}
