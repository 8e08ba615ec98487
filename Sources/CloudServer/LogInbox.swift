internal import CArchive
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// One log upload being received (`POST /v1/logs`): the body goes to a hidden file of the library's
/// `uploads/` folder as it arrives; once complete it must be a gzip-compressed tar that libarchive reads
/// to its end within the limits' expansion, and is kept, compressed as received, as
/// `uploads/<log id>.tar.gz`. A body that is cut off, too large, unpacks to too much or is not an
/// archive leaves nothing behind. An upload refused at its headers (no valid token, over its device's
/// limits) drops its body without storing it.
final class LogInbox: @unchecked Sendable {

  enum Outcome {
    case stored(logId: String, entries: Int, bytes: Int64)
    case refused(status: Int, error: String, message: String)
  }

  private static let stoppingOutcome = Outcome.refused(
    status: 503, error: "unavailable", message: "the server is stopping")

  let folder: URL
  /// The device the upload counts against, once its token was checked.
  let device: String?
  /// Why the upload was refused at its headers (answered at once).
  let refusal: Outcome?
  private let limits: UploadLimits
  /// The most this body may hold: the upload limit, or what is left of its device's quota.
  private let allowedBytes: Int64
  private let incoming: URL
  private var descriptor: Int32
  private var received: Int64 = 0
  private var failed: String?
  private var installed = false
  /// Its connection was suspended for the inspection and the request has not completed yet.
  let parked = Atomic<Bool>(false)
  /// What ``finish(stopping:)`` decided, read by the connection's thread once it is resumed.
  private let decided = Locked<Outcome?>(nil)

  /// The outcome, once the body was checked.
  var outcome: Outcome? { decided.withLock { $0 } }

  /// Opens the hidden file the body of `device`'s upload goes to (at most `allowedBytes`).
  init(folder: URL, device: String, limits: UploadLimits, allowedBytes: Int64) {
    self.folder = folder
    self.device = device
    self.limits = limits
    self.allowedBytes = allowedBytes
    refusal = nil
    incoming = folder.appendingPathComponent(".incoming-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    descriptor = open(incoming.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if descriptor < 0 { failed = "the upload folder cannot be written" }
  }

  /// An upload refused at its headers: nothing is written.
  init(refused status: Int, _ error: String, _ message: String) {
    folder = URL(fileURLWithPath: "/")
    device = nil
    limits = UploadLimits()
    allowedBytes = 0
    refusal = .refused(status: status, error: error, message: message)
    incoming = URL(fileURLWithPath: "/nonexistent")
    descriptor = -1
    installed = true
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
    if !installed { unlink(incoming.path) }
  }

  /// Appends the next piece of the body (beyond the limit, the rest is read and dropped).
  func receive(_ bytes: UnsafeRawBufferPointer) {
    received += Int64(bytes.count)
    guard refusal == nil, failed == nil, received <= allowedBytes else { return }
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

  /// The body is complete: checks it and keeps it under a new log id (once; later calls return the same
  /// outcome). A server `stopping` ends the inspection early with 503.
  func finish(stopping: borrowing Atomic<Bool>) -> Outcome {
    if let outcome { return outcome }
    let outcome = check(stopping)
    decided.withLock { $0 = outcome }
    return outcome
  }

  private func check(_ stopping: borrowing Atomic<Bool>) -> Outcome {
    if let refusal { return refusal }
    // Queued behind others while the server began to stop: not inspected at all.
    if stopping.load(ordering: .relaxed) { return Self.stoppingOutcome }
    if descriptor >= 0 { close(descriptor) }
    descriptor = -1
    // A refused body goes before the answer does: a client reading the folder after a 413 finds nothing.
    defer {
      if !installed {
        unlink(incoming.path)
        installed = true
      }
    }
    if received > allowedBytes {
      return .refused(
        status: 413, error: "too_large",
        message: received > limits.maximumBytes
          ? "a log upload holds at most \(limits.maximumBytes) bytes"
          : "the device's uploads may hold \(limits.quotaBytes) bytes in all")
    }
    if let failed { return .refused(status: 500, error: "internal", message: failed) }
    guard received > 0 else { return .refused(status: 400, error: "invalid_archive", message: "the body is empty") }
    let entries: Int
    let unpackLimit = min(
      limits.maximumUnpackedBytes,
      received.multipliedReportingOverflow(by: limits.maximumExpansion).overflow
        ? .max : received * limits.maximumExpansion)
    do {
      let reader = ArchiveReader()
      try reader.open(incoming)
      entries = try reader.countEntries(unpackingAtMost: unpackLimit) {
        stopping.load(ordering: .relaxed)
      }
    } catch ArchiveReader.Inspection.stopped {
      return Self.stoppingOutcome
    } catch ArchiveReader.Inspection.expands {
      return .refused(
        status: 413, error: "too_large",
        message: "the archive unpacks to more than \(unpackLimit) bytes (\(limits.maximumExpansion)× its size at most)")
    } catch {
      return .refused(status: 400, error: "invalid_archive", message: "the body is not a .tar.gz: \(error)")
    }
    // Stored only if it can still be answered: a client that gets no 201 retries, and would store it twice.
    if stopping.load(ordering: .sequentiallyConsistent) { return Self.stoppingOutcome }
    let logId = "log-" + UUID().uuidString.lowercased()
    guard rename(incoming.path, folder.appendingPathComponent("\(logId).tar.gz").path) == 0 else {
      return .refused(status: 500, error: "internal", message: "the upload cannot be kept")
    }
    installed = true
    return .stored(logId: logId, entries: entries, bytes: received)
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

  enum Inspection: Error {
    /// The archive unpacks to more than it may.
    case expands
    /// The server is stopping.
    case stopped
  }

  /// Counts the entries, reading their data block by block; past `limit` unpacked bytes (headers and
  /// data as the decompressor gave them) it stops with ``Inspection/expands``.
  /// `stopped` is asked after every block.
  func countEntries(unpackingAtMost limit: Int64, stopped: () -> Bool) throws -> Int {
    var entries = 0
    var entry: OpaquePointer?
    var block: UnsafeRawPointer?
    var size = 0
    var offset: Int64 = 0
    while true {
      let status = archive_read_next_header(archive, &entry)
      if status == carchive_eof { return entries }
      guard status == carchive_ok else { throw failure() }
      // An archive of empty entries reads no data block: asked at each header too.
      if stopped() { throw Inspection.stopped }
      while true {
        let read = archive_read_data_block(archive, &block, &size, &offset)
        if read == carchive_eof { break }
        guard read == carchive_ok else { throw failure() }
        if stopped() { throw Inspection.stopped }
        // What the gzip filter has produced so far (sparse holes in tar entries cost nothing to skip).
        if archive_filter_bytes(archive, 0) > limit { throw Inspection.expands }
      }
      if archive_filter_bytes(archive, 0) > limit { throw Inspection.expands }
      entries += 1
    }
  }

  private func failure() -> MediaError {
    MediaError(.invalidArgument, archive_error_string(archive).map { String(cString: $0) } ?? "unreadable")
  }
}
