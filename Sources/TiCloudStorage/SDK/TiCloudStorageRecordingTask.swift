import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// The synchronous answer of `startRecording`: the task exactly when the code is ok (T1).
public final class TiCloudStorageRecordingTaskStartResult: Sendable {
  /// ok or why no task was created.
  public let code: Int32
  /// The running task, when `code` is ok.
  public let task: TiCloudStorageRecordingTask?

  init(code: Int32, task: TiCloudStorageRecordingTask? = nil) {
    self.code = code
    self.task = task
  }
}

/// Records what a Replay plays into an MP4 in the SDK cache directory (the seed's
/// `TiCloudStorageRecordingTask`, rules.md group T): from the next keyframe of its video channel, at
/// source timing whatever the speed, a seek or a gap closed up.
///
/// It has no state, duration, cancel or dispose (T10): ``stop()`` ends it, and the end of its play
/// (natural completion, `stop`, a new play, an error) finishes it too (T7, T17). Every stop gets the same
/// result (T6).
public final class TiCloudStorageRecordingTask: @unchecked Sendable {
  private let runtime = Runtime.shared
  private let recorder: ReplayRecorder
  private weak var engine: Replay?
  private let outcome = Locked<Outcome>(Outcome())

  struct Outcome {
    var result: TiCloudStorageRecordingResult?
    var waiting: [@Sendable (TiCloudStorageRecordingResult) -> Void] = []
    var finishing = false
  }

  init(recorder: ReplayRecorder, engine: Replay) {
    self.recorder = recorder
    self.engine = engine
  }

  /// Stops taking media, writes what was received and finishes the MP4: ok and the file (T5), or
  /// noRecordableMedia (T14), unsupportedFormat (T12), recordingOverrun (T13), fileWriteFailed (T15)
  /// with no file. Resumes in the caller's context.
  public func stop() async -> TiCloudStorageRecordingResult {
    await withCheckedContinuation { continuation in
      requestStop { continuation.resume(returning: $0) }
    }
  }

  /// ``stop()`` with a completion called once on the main queue.
  public func stop(completion: @escaping @MainActor @Sendable (TiCloudStorageRecordingResult) -> Void) {
    requestStop { result in
      DispatchQueue.main.async { MainActor.assumeIsolated { completion(result) } }
    }
  }

  private func requestStop(_ done: @escaping @Sendable (TiCloudStorageRecordingResult) -> Void) {
    let cached = outcome.withLock { state -> TiCloudStorageRecordingResult? in
      if state.result == nil { state.waiting.append(done) }
      return state.result
    }
    if let cached {
      return DispatchQueue.global().async { done(cached) }
    }
    // Removing the recorder ends it (the engine calls `ended()`); a play that already ended did so.
    if let engine { engine.removeRecorder(recorder) } else { ended(naturally: false) }
  }

  /// The play ended for the task (`naturally`: at its range's end), or it was stopped: finish the file
  /// once.
  func ended(naturally: Bool) {
    let first = outcome.withLock { state -> Bool in
      defer { state.finishing = true }
      return !state.finishing
    }
    guard first else { return }
    let recorder = self.recorder
    recorder.finish(playedToTheEnd: naturally) { [self] result in
      let final: TiCloudStorageRecordingResult
      switch result {
      case .success(let durationMs):
        final = TiCloudStorageRecordingResult(
          code: TiCloudStorageErrorCode.ok,
          file: TiCloudStorageRecordingFile(path: recorder.destination.path, durationMs: durationMs))
      case .failure(let error):
        final = TiCloudStorageRecordingResult(code: TiErrorCode(error.kind).rawValue)
      }
      let waiting = outcome.withLock { state -> [@Sendable (TiCloudStorageRecordingResult) -> Void] in
        state.result = final
        defer { state.waiting = [] }
        return state.waiting
      }
      runtime.withLock { runtime.endOperation() }
      for done in waiting { done(final) }
    }
  }

  /// True once the play ended for the task or it was stopped: its file is being finished (the result
  /// follows from the recorder's queue).
  var hasEnded: Bool { outcome.withLock { $0.finishing } }

  /// True until the result is known.
  var isActive: Bool { outcome.withLock { $0.result == nil } }
}

extension TiCloudStorageReplay {
  /// Records what plays from now on, from the next keyframe of `videoChannelId` (T16), with
  /// `audioChannelId`'s audio when given.
  ///
  /// - Returns: ok and the task (T1); notStarted without an active play, paused included (T2);
  ///   invalidArgument for a channel outside 0...255 (T3); notInitialized after dispose. A refusal
  ///   creates no task and no file (T4). Several tasks may record at once, each into its own file (T8).
  public func startRecording(videoChannelId: Int, audioChannelId: Int? = nil) -> TiCloudStorageRecordingTaskStartResult
  {
    let runtime = Runtime.shared
    let started = runtime.withLock { () -> Result<(Replay, URL, Int, MediaTime), TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard (0...255).contains(videoChannelId), audioChannelId.map({ (0...255).contains($0) }) ?? true else {
        return .failure(TiError.refused(TiCloudStorageErrorCode.invalidArgument))
      }
      guard hasActivePlay else { return .failure(TiError.refused(TiCloudStorageErrorCode.notStarted)) }
      let output = runtime.mediaDirectory!.appendingPathComponent("recording-\(UUID().uuidString.lowercased()).mp4")
      let engine = engineIfNeeded()
      guard let start = engine.recordingStart else {
        return .failure(TiError.refused(TiCloudStorageErrorCode.notStarted))
      }
      return .success((engine, output, runtime.recorderPendingLimit, start))
    }
    guard case .success(let (engine, output, limit, start)) = started else {
      return TiCloudStorageRecordingTaskStartResult(code: started.failureCode)
    }
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: UInt8(videoChannelId)),
      audioTrack: audioChannelId.map { TrackID(.audio, channel: UInt8($0)) }, startsAt: start,
      maximumPendingBytes: limit)
    let task = TiCloudStorageRecordingTask(recorder: recorder, engine: engine)
    runtime.withLock {
      runtime.beginOperation()
      // The ended ones go as another starts (and at dispose): a long-lived Replay does not keep them all.
      recordingTasks.removeAll { !$0.isActive }
      recordingTasks.append(task)
    }
    guard engine.addRecorder(recorder, onEnd: { [weak task] naturally in task?.ended(naturally: naturally) }) == .ok
    else {
      runtime.withLock {
        runtime.endOperation()
        recordingTasks.removeAll { $0 === task }
      }
      return TiCloudStorageRecordingTaskStartResult(code: TiCloudStorageErrorCode.notStarted)
    }
    return TiCloudStorageRecordingTaskStartResult(code: TiCloudStorageErrorCode.ok, task: task)
  }
}
