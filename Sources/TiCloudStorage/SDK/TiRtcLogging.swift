import Dispatch
import Foundation
import Nodes

/// The outcome of a log upload (rules.md X10).
public final class TiRtcLogUploadResult: Sendable {
  /// ok, or why the upload failed: networkUnavailable, endpointDnsResolutionFailed,
  /// cloudStorageUnavailable (refused, failed, or an answer without a usable log id), ioFailed (the
  /// package could not be made).
  public let code: Int32
  /// The id to give to support, when the upload succeeded.
  public let logId: String?

  /// True exactly when the upload succeeded with a usable `logId`.
  public var succeeded: Bool { code == TiCloudStorageErrorCode.ok && logId.map(LogUpload.isUsable) == true }

  init(code: Int32, logId: String? = nil) {
    self.code = code
    self.logId = logId
  }
}

/// Uploads the SDK's logs (the seed's `TiRtcLogging`, rules.md X8–X16).
///
/// An upload packages the work root's `logs/cloudstorage.log` (and its rotated files) with every raw dump
/// that ended since the last successful upload into a `.tar.gz` (with a `manifest.json` listing them)
/// and sends it to the endpoint's log route: `POST {endpoint}/v1/logs` for a cloud endpoint (the
/// reference server `tipipe serve` keeps it in its library's `uploads/`), the library's `uploads/`
/// folder itself for a `file://` endpoint. Logs never hold tokens, keys or signatures; raw media goes
/// only with a dump that was completed before the upload (X14).
public enum TiRtcLogging {
  /// Starts an upload: 0 when started — the outcome then comes through `completion`, once, on the main
  /// queue (X8, X13); notInitialized before `TiCloudStorage.initialize` or after `shutdown` (X11), inUse
  /// while another upload runs — and then `completion` is never called (X9). `TiCloudStorage.shutdown()`
  /// returns inUse until the completion is delivered (X12).
  public static func upload(completion: @escaping @MainActor @Sendable (TiRtcLogUploadResult) -> Void) -> Int32 {
    upload(on: .main) { result in MainActor.assumeIsolated { completion(result) } }
  }

  /// Uploads as ``upload(completion:)`` does and returns the outcome when it is known, in the caller's
  /// context rather than on the main queue; a refused upload (notInitialized, inUse) returns at once
  /// with that code and no log id.
  public static func upload() async -> TiRtcLogUploadResult {
    await withCheckedContinuation { continuation in
      let code = upload(on: DispatchQueue.global()) { continuation.resume(returning: $0) }
      if code != TiCloudStorageErrorCode.ok { continuation.resume(returning: TiRtcLogUploadResult(code: code)) }
    }
  }

  /// Starts an upload whose outcome is handed to `completion` on `queue`; the upload counts as running
  /// until then (X12).
  private static func upload(
    on queue: DispatchQueue, completion: @escaping @Sendable (TiRtcLogUploadResult) -> Void
  ) -> Int32 {
    let runtime = Runtime.shared
    let accepted = runtime.withLock { () -> Result<(Runtime.Configuration, RuntimeLog?, String?), TiError> in
      guard let configuration = runtime.configuration else {
        return .failure(TiError.refused(TiCloudStorageErrorCode.notInitialized))
      }
      guard runtime.beginUpload() else { return .failure(TiError.refused(TiCloudStorageErrorCode.inUse)) }
      return .success((configuration, runtime.log, runtime.latestToken))
    }
    guard case .success(let (configuration, log, token)) = accepted else { return accepted.failureCode }
    let deliver: @Sendable (TiRtcLogUploadResult) -> Void = { result in
      queue.async {
        // Delivered from here on: a caller woken by the completion may shut down at once.
        runtime.endUpload()
        completion(result)
      }
    }
    DispatchQueue.global().async {
      log?.write("log upload started")
      let package: LogPackage
      do {
        package = try LogPackage.make(workRoot: configuration.workRoot, appId: configuration.appId)
      } catch {
        log?.write("log upload failed: cannot package the logs: \(TiError(error).message)")
        return deliver(TiRtcLogUploadResult(code: TiCloudStorageErrorCode.ioFailed))
      }
      LogUpload.send(package.archive, to: configuration.endpoint, appId: configuration.appId, token: token) {
        outcome in
        try? FileManager.default.removeItem(at: package.archive)
        switch outcome {
        case .success(let logId):
          for dump in package.dumps { RawDumpFolder.markUploaded(dump) }
          log?.write("log upload \(logId) done: \(package.entries) files, \(package.dumps.count) raw dumps")
          deliver(TiRtcLogUploadResult(code: TiCloudStorageErrorCode.ok, logId: logId))
        case .failure(let failure):
          let error = TiError(failure)
          log?.write("log upload failed (\(error.code.rawValue)): \(error.message)")
          deliver(TiRtcLogUploadResult(code: error.code.rawValue))
        }
      }
    }
    return TiCloudStorageErrorCode.ok
  }
}
