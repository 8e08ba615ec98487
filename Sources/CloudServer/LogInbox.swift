internal import CArchive
import Foundation
import Nodes

/// One log upload being received (`POST /v1/logs`): the body goes to a hidden file of the library's
/// `uploads/` folder as it arrives; once complete it must be a gzip-compressed tar that libarchive reads
/// to its end, and is kept as `uploads/<log id>.tar.gz`. A body that is cut off, too large or not an
/// archive leaves nothing behind.
final class LogInbox: @unchecked Sendable {
  /// The largest body accepted: a raw dump may hold 1 GiB, logs a few more megabytes.
  static let maximumBytes: Int64 = (1 << 30) + (64 << 20)

  enum Outcome {
    case stored(logId: String, entries: Int, bytes: Int64)
    case refused(status: Int, error: String, message: String)
  }

  let folder: URL
  private let incoming: URL
  private var descriptor: Int32
  private var received: Int64 = 0
  private var failed: String?
  private var installed = false

  /// Opens the hidden file the body goes to.
  init(folder: URL) {
    self.folder = folder
    incoming = folder.appendingPathComponent(".incoming-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    descriptor = open(incoming.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if descriptor < 0 { failed = "the upload folder cannot be written" }
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
    if !installed { unlink(incoming.path) }
  }

  /// Appends the next piece of the body (beyond the limit, the rest is read and dropped).
  func receive(_ bytes: UnsafeRawBufferPointer) {
    received += Int64(bytes.count)
    guard failed == nil, received <= Self.maximumBytes else { return }
    var offset = 0
    while offset < bytes.count {
      let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
      guard written > 0 else {
        failed = "the upload cannot be stored"
        return
      }
      offset += written
    }
  }

  /// The body is complete: checks it and keeps it under a new log id.
  func finish() -> Outcome {
    if descriptor >= 0 { close(descriptor) }
    descriptor = -1
    if received > Self.maximumBytes {
      return .refused(status: 413, error: "too_large", message: "a log upload holds at most \(Self.maximumBytes) bytes")
    }
    if let failed { return .refused(status: 500, error: "internal", message: failed) }
    guard received > 0 else { return .refused(status: 400, error: "invalid_archive", message: "the body is empty") }
    let entries: Int
    do {
      entries = try Self.countEntries(incoming)
    } catch {
      return .refused(status: 400, error: "invalid_archive", message: "the body is not a .tar.gz: \(error)")
    }
    let logId = "log-" + UUID().uuidString.lowercased()
    guard rename(incoming.path, folder.appendingPathComponent("\(logId).tar.gz").path) == 0 else {
      return .refused(status: 500, error: "internal", message: "the upload cannot be kept")
    }
    installed = true
    return .stored(logId: logId, entries: entries, bytes: received)
  }

  /// Reads the archive to its end (every entry's data too, so a truncated member is found).
  private static func countEntries(_ file: URL) throws -> Int {
    let reader = ArchiveReader()
    try reader.open(file)
    return try reader.countEntries()
  }
}

/// libarchive's reader for gzip-compressed tar files, owned by this object and freed in `deinit`.
private final class ArchiveReader {
  private let archive: OpaquePointer

  init() {
    // Allocation failure is not recoverable (as for OpenSSL's contexts).
    guard let archive = archive_read_new() else { fatalError("libarchive cannot allocate a reader") }
    self.archive = archive
    archive_read_support_filter_gzip(archive)
    archive_read_support_format_tar(archive)
  }

  deinit { archive_read_free(archive) }

  func open(_ file: URL) throws {
    guard archive_read_open_filename(archive, file.path, 64 << 10) == carchive_ok else { throw failure() }
  }

  func countEntries() throws -> Int {
    var entries = 0
    var entry: OpaquePointer?
    while true {
      let status = archive_read_next_header(archive, &entry)
      if status == carchive_eof { return entries }
      guard status == carchive_ok else { throw failure() }
      guard archive_read_data_skip(archive) == carchive_ok else { throw failure() }
      entries += 1
    }
  }

  private func failure() -> TiError {
    TiError(.invalidArgument, archive_error_string(archive).map { String(cString: $0) } ?? "unreadable")
  }
}
