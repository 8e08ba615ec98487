import Dispatch
import Foundation
import Nodes

/// The result of a snapshot: a code and, exactly when it is ok, the file.
public final class TiCloudStorageSnapshotResult: Sendable {
  /// ok or the failure.
  public let code: Int32
  /// The JPEG, when `code` is ok.
  public let file: TiCloudStorageSnapshotFile?

  init(code: Int32, file: TiCloudStorageSnapshotFile? = nil) {
    self.code = code
    self.file = file
  }
}

extension TiCloudStorageVideoOutput {
  /// Takes the frame under the lock, encodes and writes it on a global queue, and calls `done` once,
  /// never inside the caller's stack (L4).
  func startSnapshot(_ done: @escaping @Sendable (TiCloudStorageSnapshotResult) -> Void) {
    let runtime = Runtime.shared
    let core = self.core
    let taken = runtime.withLock { () -> Result<(DecodedFrame, URL), TiError> in
      let code = core.admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard !core.snapshotPending else { return .failure(TiError.refused(TiCloudStorageErrorCode.inUse)) }
      guard let frame = core.frame else { return .failure(TiError.refused(TiCloudStorageErrorCode.noFrame)) }
      guard runtime.beginSnapshot() else {
        return .failure(TiError.refused(TiCloudStorageErrorCode.resourceExhausted))
      }
      core.snapshotPending = true
      let name = "snapshot-\(UUID().uuidString.lowercased()).jpg"
      return .success((frame, runtime.mediaDirectory!.appendingPathComponent(name)))
    }
    guard case .success(let (frame, url)) = taken else {
      let code = taken.failureCode
      return DispatchQueue.global().async { done(TiCloudStorageSnapshotResult(code: code)) }
    }
    runtime.snapshotQueue.async {
      let result: TiCloudStorageSnapshotResult
      do {
        try MediaFiles.writeNew(try frame.jpegData(), to: url)
        result = TiCloudStorageSnapshotResult(
          code: TiCloudStorageErrorCode.ok, file: TiCloudStorageSnapshotFile(path: url.path))
      } catch {
        result = TiCloudStorageSnapshotResult(code: TiCloudStorageErrorCode.fileWriteFailed)
      }
      runtime.withLock {
        core.snapshotPending = false
        runtime.endSnapshot()
      }
      done(result)
    }
  }
}
