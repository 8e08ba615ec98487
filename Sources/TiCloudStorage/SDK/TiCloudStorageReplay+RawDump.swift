import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// Raw dumps of what a replay reads (seed's TiRawDump).
extension TiCloudStorageReplay {

  /// Starts a raw audio/video diagnostic capture of `options`' channels (see ``TiRawDump``): ok and the
  /// dump, or notConfigured for two empty lists, invalidArgument for an ID outside 0...255 (X1, X2),
  /// inUse while a dump runs anywhere in the process (X6), notInitialized after `dispose`,
  /// fileWriteFailed when its folder cannot be made. It needs no play (X7). Resumes in the caller's
  /// context.
  public func startRawDump(options: TiCloudStorageRawDumpOptions) async -> TiRawDumpStartResult {
    beginRawDump(options)
  }

  /// ``startRawDump(options:)`` with a completion called once on the main queue (X5).
  public func startRawDump(
    options: TiCloudStorageRawDumpOptions, completion: @escaping @MainActor @Sendable (TiRawDumpStartResult) -> Void
  ) {
    let result = beginRawDump(options)
    DispatchQueue.main.async { MainActor.assumeIsolated { completion(result) } }
  }

  private func beginRawDump(_ options: TiCloudStorageRawDumpOptions) -> TiRawDumpStartResult {
    let channels = options.audioChannelIds + options.videoChannelIds
    guard !channels.isEmpty else { return TiRawDumpStartResult(code: TiCloudStorageErrorCode.notConfigured) }
    guard channels.allSatisfy({ (0...255).contains($0) }) else {
      return TiRawDumpStartResult(code: TiCloudStorageErrorCode.invalidArgument)
    }
    let tracks = Set(
      options.audioChannelIds.map { TrackID(.audio, channel: UInt8($0)) }
        + options.videoChannelIds.map { TrackID(.video, channel: UInt8($0)) })
    let started = runtime.withLock { () -> Result<(RawDumpWriter, Replay, RuntimeLog?), TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard let folder = runtime.dumpsDirectory else {
        return .failure(TiError.refused(TiCloudStorageErrorCode.notInitialized))
      }
      let log = runtime.log
      let engine = engineIfNeeded()
      do {
        RawDumpFolder.prune(folder, keeping: TiCloudStorage.retainedRawDumps - 1)
        let writer = try RawDumpWriter(
          directory: RawDumpFolder.newDump(in: folder), tracks: tracks,
          maximumBytes: TiCloudStorage.maximumRawDumpBytes,
          maximumDurationMs: TiCloudStorage.maximumRawDumpDurationMs)
        guard runtime.beginRawDump(writer) else {
          try? FileManager.default.removeItem(at: writer.directory)
          return .failure(TiError.refused(TiCloudStorageErrorCode.inUse))
        }
        rawDump = writer
        return .success((writer, engine, log))
      } catch {
        return .failure(TiError.refused(TiCloudStorageErrorCode.fileWriteFailed))
      }
    }
    guard case .success(let (writer, engine, log)) = started else {
      return TiRawDumpStartResult(code: started.failureCode)
    }
    writer.whenFinished { [weak self] summary in
      log?.write(
        "raw dump \(summary.directory.lastPathComponent) ended (\(summary.reason.rawValue)): "
          + "\(summary.files.count) files, \(summary.files.reduce(0) { $0 + $1.bytes }) bytes")
      Runtime.shared.endRawDump(writer)
      guard let self else { return }
      runtime.withLock { if self.rawDump === writer { self.rawDump = nil } }
    }
    engine.attachRawDump(writer, maximumDuration: .milliseconds(TiCloudStorage.maximumRawDumpDurationMs))
    log?.write(
      "raw dump \(writer.directory.lastPathComponent) started: \(tracks.sorted { $0.description < $1.description })")
    return TiRawDumpStartResult(code: TiCloudStorageErrorCode.ok, dump: TiRawDump(writer: writer))
  }
}
