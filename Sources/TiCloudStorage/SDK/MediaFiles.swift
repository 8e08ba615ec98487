import Foundation
import Nodes

/// The files the SDK returns (rules.md group F): written under fresh unique names in `media/` of the
/// work root, never over an existing file.
enum MediaFiles {
  /// Writes `data` to a new file at `url` (fails if anything exists there).
  static func writeNew(_ data: Data, to url: URL) throws {
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw TiError(.fileWriteFailed, "cannot create \(url.path)") }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    do {
      try handle.write(contentsOf: data)
      try handle.synchronize()
    } catch {
      try? FileManager.default.removeItem(at: url)
      throw TiError(.fileWriteFailed, "cannot write \(url.path)")
    }
  }

  /// Deletes the file at `path` (F4–F7): ok when removed or already gone; 6045 when its status cannot
  /// be read or it lies outside the media folder of a work root; nothing but that file is touched.
  static func delete(_ path: String) -> Int32 {
    let url = URL(fileURLWithPath: path).standardizedFileURL
    // Only the files the SDK wrote: directly inside a `media` folder, with the SDK's name prefixes.
    let name = url.lastPathComponent
    guard url.deletingLastPathComponent().lastPathComponent == "media",
      name.hasPrefix("snapshot-") || name.hasPrefix("recording-") || name.hasPrefix("export-")
    else { return TiErrorCode.fileStatusUnreadable.rawValue }
    var status = stat()
    if lstat(url.path, &status) != 0 {
      return errno == ENOENT ? TiCloudStorageErrorCode.ok : TiErrorCode.fileStatusUnreadable.rawValue
    }
    guard (status.st_mode & S_IFMT) == S_IFREG else { return TiErrorCode.fileStatusUnreadable.rawValue }
    if unlink(url.path) != 0 && errno != ENOENT { return TiErrorCode.fileStatusUnreadable.rawValue }
    return TiCloudStorageErrorCode.ok
  }
}

extension MediaFiles {
  /// ``delete(_:)`` off the caller's thread.
  static func delete(_ path: String) async -> Int32 {
    await Task.detached { delete(path) }.value
  }

  /// ``delete(_:)`` on a global queue, `completion` on the main queue.
  static func delete(_ path: String, completion: @escaping @MainActor @Sendable (Int32) -> Void) {
    DispatchQueue.global().async {
      let code = delete(path)
      DispatchQueue.main.async { MainActor.assumeIsolated { completion(code) } }
    }
  }
}

/// A JPEG a Video Output saved (rules.md S1, F1): valid after its Output, its instance and the SDK are
/// gone (F8); the SDK never removes it on its own (F11).
public final class TiCloudStorageSnapshotFile: Sendable {
  /// The file's absolute path, in the SDK cache directory.
  public let path: String

  init(path: String) { self.path = path }

  /// Removes the file; ok again when it is gone (F4, F5); 6045 when its status cannot be read (F7).
  public func delete() async -> Int32 { await MediaFiles.delete(path) }

  /// Removes the file; `completion` runs once on the main queue.
  public func delete(completion: @escaping @MainActor @Sendable (Int32) -> Void) {
    MediaFiles.delete(path, completion: completion)
  }
}

/// An MP4 a RecordingTask or an ExportTask produced (rules.md F1, F10): valid after its task, its
/// instance and the SDK are gone (F8).
public final class TiCloudStorageRecordingFile: Sendable {
  /// The file's absolute path, in the SDK cache directory.
  public let path: String
  /// The media duration of the MP4, in ms.
  public let durationMs: Int64

  init(path: String, durationMs: Int64) {
    self.path = path
    self.durationMs = durationMs
  }

  /// Removes the file; ok again when it is gone (F4, F5); 6045 when its status cannot be read (F7).
  public func delete() async -> Int32 { await MediaFiles.delete(path) }

  /// Removes the file; `completion` runs once on the main queue.
  public func delete(completion: @escaping @MainActor @Sendable (Int32) -> Void) {
    MediaFiles.delete(path, completion: completion)
  }
}

/// The result of a RecordingTask or a simple export: a code and, exactly when it is ok, the file.
public final class TiCloudStorageRecordingResult: Sendable {
  /// ok or the failure.
  public let code: Int32
  /// The MP4, when `code` is ok.
  public let file: TiCloudStorageRecordingFile?

  init(code: Int32, file: TiCloudStorageRecordingFile? = nil) {
    self.code = code
    self.file = file
  }
}
