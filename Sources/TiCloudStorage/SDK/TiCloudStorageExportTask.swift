import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// A running export of the seed (`TiCloudStorageExportTask`, rules.md group E): the export graph
/// (``ExportJob``) writing an MP4 into the SDK cache directory, with its progress and report.
///
/// Its callbacks run on the queue chosen at start, the completion last (E17); it releases itself once
/// the completion has run (E39). `cancel()` and `stop()` are non-blocking and idempotent.
public final class TiCloudStorageExportTask: @unchecked Sendable {
  private let runtime = Runtime.shared
  private let instance: TiCloudStorage
  private let queue: DispatchQueue
  private let token: String
  // Guarded by the runtime's lock.
  private var job: ExportJob?
  private var fraction = 0.0
  private var covered: Int64 = 0
  private var finalReport: TiCloudStorageExportReport?
  private var ended = false

  /// The SDK log (nil when the runtime has none), and the task's number in it.
  let log: RuntimeLog?
  let id = UUID().uuidString.prefix(8).lowercased()

  init(instance: TiCloudStorage, queue: DispatchQueue, token: String, log: RuntimeLog?) {
    self.instance = instance
    self.queue = queue
    self.token = token
    self.log = log
  }

  /// The fraction of the range scanned, 0.0...1.0, never decreasing (E11, E14).
  public var progress: Double { runtime.withLock { fraction } }

  /// The fraction and the source duration written so far (E12, E13).
  public var progressDetail: TiCloudStorageExportProgress {
    runtime.withLock { TiCloudStorageExportProgress(fraction: fraction, coveredDurationMs: covered) }
  }

  /// nil until the task has ended, then the completion's report (E45).
  public var report: TiCloudStorageExportReport? { runtime.withLock { finalReport } }

  /// Asks the task to end without a file: the completion says cancelled (6115) unless another ending
  /// came first (E32–E34, E37); ok, also when repeated or after the end (E38).
  public func cancel() -> Int32 {
    runtime.withLock { job }?.cancel()
    return TiCloudStorageErrorCode.ok
  }

  /// Asks the task to stop and remove its unfinished file: the completion says stopped (6124) unless
  /// another ending came first (E35–E38); ok every time.
  public func stop() -> Int32 {
    runtime.withLock { job }?.stop()
    return TiCloudStorageErrorCode.ok
  }

  // MARK: Running (package-internal)

  /// The caller's closures: they run only on the queue it chose.
  struct Callbacks: @unchecked Sendable {
    var progress: ((Double) -> Void)?
    var progressDetail: ((TiCloudStorageExportProgress) -> Void)?
    var gap: ((TiCloudStorageRecordingGap) -> Void)?
    var completion: (TiCloudStorageExportResult) -> Void
  }

  /// Starts the graph; the error when it could not be built (the output cannot be written).
  func start(request: ExportJob.Request, service: any RecordingService, callbacks: Callbacks) -> TiError? {
    let source = CloudSegmentSource(service: service, range: request.range, token: token, prefetchBytes: 8 << 20)
    do {
      let job = try ExportJob(
        request: request, source: source,
        progress: { [weak self] fraction, covered in self?.advanced(fraction, covered, callbacks) },
        completion: { [self] result in finished(result, callbacks) })
      runtime.withLock { self.job = job }
      return nil
    } catch {
      return TiError(error)
    }
  }

  /// Ends at once with `code` and a report of nothing scanned (a range too long, an output that cannot
  /// be created).
  func fail(_ code: Int32, _ message: String, range: MediaRange, callbacks: Callbacks) {
    let requested = ExportReport.Range(startMs: range.start.milliseconds, endMs: range.end.milliseconds)
    let report = ExportReport.unscanned(requested, termination: .failed, cause: code)
    finished(
      ExportResult(code: TiErrorCode(rawValue: code), file: nil, durationMs: 0, report: report, message: message),
      callbacks)
  }

  private func advanced(_ newFraction: Double, _ newCovered: Int64, _ callbacks: Callbacks) {
    let detail = runtime.withLock { () -> TiCloudStorageExportProgress? in
      guard !ended else { return nil }
      let clamped = min(max(newFraction, fraction), 1)
      guard clamped > fraction || newCovered > covered else { return nil }
      fraction = clamped
      covered = max(covered, newCovered)
      return TiCloudStorageExportProgress(fraction: fraction, coveredDurationMs: covered)
    }
    guard let detail else { return }
    deliver {
      callbacks.progress?(detail.fraction)
      callbacks.progressDetail?(detail)
    }
  }

  /// Delivers the last progress (1.0 for an exhausted scan, E17; the report's covered duration, E13),
  /// each gap of the report once (E30: gaps are confirmed as the report closes, so the callbacks and the
  /// report agree), then the completion.
  private func finished(_ result: ExportResult, _ callbacks: Callbacks) {
    let report = TiCloudStorageExportReport(result.report)
    let file = result.file.map { TiCloudStorageRecordingFile(path: $0.path, durationMs: result.durationMs) }
    let final = TiCloudStorageExportResult(
      code: result.code.rawValue, file: file, report: report, message: result.code == .ok ? nil : result.message)
    log?.write(
      "export \(id) ended: \(result.code.name) (\(result.code.rawValue)), \(result.report.termination), "
        + "\(result.report.coveredDurationMs) ms covered in \(result.report.segments.count) segment(s), "
        + "\(result.report.gaps.count) gap(s)"
        + ((result.error?.detailedDescription ?? result.message).map { ": \($0.oneLine)" } ?? ""))
    let expired = result.code == .tokenExpired || result.report.cause == TiErrorCode.tokenExpired.rawValue
    let detail = runtime.withLock { () -> TiCloudStorageExportProgress? in
      finalReport = report
      ended = true
      if expired { instance.noteExpired(token) }
      let last = result.report.termination == .exhausted ? 1 : fraction
      guard last > fraction || report.coveredDurationMs > covered else { return nil }
      fraction = last
      covered = max(covered, report.coveredDurationMs)
      return TiCloudStorageExportProgress(fraction: fraction, coveredDurationMs: covered)
    }
    deliver { [self] in
      if let detail {
        callbacks.progress?(detail.fraction)
        callbacks.progressDetail?(detail)
      }
      if let gap = callbacks.gap { report.gaps.forEach(gap) }
      // The task no longer holds its instance once its completion runs (E39); inside the completion,
      // disposing the instance is still refused (L24).
      runtime.withLock {
        job = nil
        instance.exportEnded()
        runtime.endExport()
      }
      callbacks.completion(final)
    }
  }

  private func deliver(_ body: @escaping @Sendable () -> Void) {
    runtime.deliver(on: queue, for: [self, instance], body)
  }
}

extension TiCloudStorage {
  /// The most exports that run at once; one more is refused with resourceExhausted at start (E7).
  public static let maximumConcurrentExports = 4

  /// Exports a range to an MP4 in the SDK cache directory, with progress and a simple result, both on
  /// the main queue (E8). See the detailed overload for the rules.
  public func exportRecording(
    _ request: TiCloudStorageExportRequest, progress: ((Double) -> Void)?,
    completion: @escaping (TiCloudStorageRecordingResult) -> Void
  ) -> TiCloudStorageExportTaskStartResult {
    exportRecording(
      request, progress: progress, progressDetail: nil, onRecordingGap: nil, callbackThread: .main
    ) { result in
      completion(TiCloudStorageRecordingResult(code: result.code, file: result.file))
    }
  }

  /// Exports as the detailed overload does and returns the result when the export has ended, in the
  /// caller's context; `onRecordingGap` runs on the SDK's background queue. A refused export returns at
  /// once with the refusal's code, no file and no report. Cancelling the awaiting task cancels the
  /// export (its result then says cancelled, 6115, unless another ending came first).
  public func exportRecording(
    _ request: TiCloudStorageExportRequest, onRecordingGap: (@Sendable (TiCloudStorageRecordingGap) -> Void)? = nil
  ) async -> TiCloudStorageExportResult {
    let running = Locked<TiCloudStorageExportTask?>(nil)
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let start = exportRecording(
          request, progress: nil, progressDetail: nil, onRecordingGap: onRecordingGap.map { gap in { gap($0) } },
          callbackThread: .background
        ) { continuation.resume(returning: $0) }
        guard let task = start.task else {
          return continuation.resume(
            returning: TiCloudStorageExportResult(
              code: start.code, file: nil, report: nil, message: "the export was refused (\(start.code))"))
        }
        running.withLock { $0 = task }
        // A cancellation that came before the task was known.
        if Task.isCancelled { _ = task.cancel() }
      }
    } onCancel: {
      _ = running.withLock { $0 }?.cancel()
    }
  }

  /// Exports `[startTimeMs, endTimeMs)` of the request's channels to a new MP4 in the SDK cache
  /// directory (or at the request's `outputPath`, a Linux addition) with the instance's current token
  /// (E2), its callbacks on `callbackThread` (E9).
  ///
  /// - Returns: ok and the running task (E3); invalidArgument for an empty range or a channel outside
  ///   0...255 (E6) or an `outputPath` that is not a missing or regular file, an instance without a
  ///   token (D2); tokenExpired once the token is known to have
  ///   expired (D11); resourceExhausted beyond ``maximumConcurrentExports`` (E7); notInitialized after
  ///   dispose (D16). A refused export never calls back (E4), and no callback runs before this returns
  ///   (E5). A range over 10 days completes with rangeTooLarge (E46).
  public func exportRecording(
    _ request: TiCloudStorageExportRequest, progress: ((Double) -> Void)?,
    progressDetail: ((TiCloudStorageExportProgress) -> Void)?,
    onRecordingGap: ((TiCloudStorageRecordingGap) -> Void)?, callbackThread: TiCloudStorageCallbackThread,
    completion: @escaping (TiCloudStorageExportResult) -> Void
  ) -> TiCloudStorageExportTaskStartResult {
    let runtime = Runtime.shared
    let callbacks = TiCloudStorageExportTask.Callbacks(
      progress: progress, progressDetail: progressDetail, gap: onRecordingGap, completion: completion)
    let started = runtime.withLock {
      () -> Result<(TiCloudStorageExportTask, any RecordingService, String, URL), TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard request.startTimeMs < request.endTimeMs, MediaTime.validMilliseconds.contains(request.startTimeMs),
        MediaTime.validMilliseconds.contains(request.endTimeMs), (0...255).contains(request.videoChannelId),
        request.audioChannelId.map({ (0...255).contains($0) }) ?? true,
        request.outputPath.map({ (try? OutputFile.validate(URL(fileURLWithPath: $0))) != nil }) ?? true
      else { return .failure(TiError.refused(TiCloudStorageErrorCode.invalidArgument)) }
      let token = tokenForNewOperation()
      guard case .success(let token) = token else { return .failure(TiError.refused(token.failureCode)) }
      guard runtime.beginExport() else { return .failure(TiError.refused(TiCloudStorageErrorCode.resourceExhausted)) }
      let task = TiCloudStorageExportTask(
        instance: self, queue: runtime.queue(callbackThread), token: token, log: runtime.log)
      exportStarted()
      let output =
        request.outputPath.map { URL(fileURLWithPath: $0) }
        ?? runtime.mediaDirectory!.appendingPathComponent("export-\(UUID().uuidString.lowercased()).mp4")
      return .success((task, runtime.service!, token, output))
    }
    guard case .success(let (task, service, _, output)) = started else {
      return TiCloudStorageExportTaskStartResult(code: started.failureCode)
    }
    let range = MediaRange(startMilliseconds: request.startTimeMs, endMilliseconds: request.endTimeMs)
    task.log?.write(
      "export \(task.id) started: [\(request.startTimeMs), \(request.endTimeMs)) video \(request.videoChannelId)"
        + " audio \(request.audioChannelId.map(String.init) ?? "none")"
        + (request.outputPath == nil ? " into the cache" : " to a path of the caller's"))
    if request.endTimeMs - request.startTimeMs > RecordingQueries.maximumSpanMilliseconds {
      task.fail(
        TiCloudStorageErrorCode.rangeTooLarge, "an export spans at most 10 days", range: range, callbacks: callbacks)
      return TiCloudStorageExportTaskStartResult(code: TiCloudStorageErrorCode.ok, task: task)
    }
    let exportRequest = ExportJob.Request(
      range: range, videoTrack: TrackID(.video, channel: UInt8(request.videoChannelId)),
      audioTrack: request.audioChannelId.map { TrackID(.audio, channel: UInt8($0)) }, output: output)
    if let error = task.start(request: exportRequest, service: service, callbacks: callbacks) {
      // The path was checked above (or is the cache's): what fails now is writing there (E44).
      task.fail(TiCloudStorageErrorCode.fileWriteFailed, error.message, range: range, callbacks: callbacks)
      return TiCloudStorageExportTaskStartResult(code: TiCloudStorageErrorCode.ok, task: task)
    }
    return TiCloudStorageExportTaskStartResult(code: TiCloudStorageErrorCode.ok, task: task)
  }
}
