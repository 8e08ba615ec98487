internal import CArchive
import Foundation
import Glibc
import Nodes

/// A gzip-compressed tar archive written with libarchive (the log upload's package). The `archive`
/// handle is owned by this object and freed in `deinit`.
final class LogArchive {
  private let archive: OpaquePointer
  let url: URL
  private var closed = false

  /// Starts an archive at `url` (a new file).
  init(url: URL) throws {
    guard let archive = archive_write_new() else { throw TiError(.ioFailed, "libarchive cannot allocate a writer") }
    self.archive = archive
    self.url = url
    guard archive_write_add_filter_gzip(archive) == carchive_ok,
      archive_write_set_format_pax_restricted(archive) == carchive_ok,
      archive_write_open_filename(archive, url.path) == carchive_ok
    else { throw failure("cannot create \(url.path)") }
  }

  deinit {
    if !closed { archive_write_close(archive) }
    archive_write_free(archive)
  }

  /// Adds the regular file at `source` as `name` (read in pieces: a dump may be a gigabyte). A file that
  /// is not regular is refused.
  func add(file source: URL, as name: String) throws {
    let descriptor = open(source.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard descriptor >= 0 else { throw TiError(.ioFailed, "cannot read \(source.path)") }
    defer { Glibc.close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw TiError(.ioFailed, "\(source.path) is not a regular file")
    }
    try header(name, size: Int64(status.st_size), modified: status.st_mtim.tv_sec)
    var buffer = [UInt8](repeating: 0, count: 256 << 10)
    var remaining = Int64(status.st_size)
    while remaining > 0 {
      let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, min($0.count, Int(remaining))) }
      guard got > 0 else { throw TiError(.ioFailed, "\(source.path) changed while it was packaged") }
      try write(buffer.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[..<got]) })
      remaining -= Int64(got)
    }
  }

  /// Adds `data` as `name`.
  func add(_ data: Data, as name: String) throws {
    try header(name, size: Int64(data.count), modified: Int(Date().timeIntervalSince1970))
    try data.withUnsafeBytes { try write($0) }
  }

  /// Finishes the archive (its trailer and the gzip end).
  func close() throws {
    closed = true
    guard archive_write_close(archive) == carchive_ok else { throw failure("cannot finish \(url.path)") }
  }

  private func header(_ name: String, size: Int64, modified: Int) throws {
    guard let entry = archive_entry_new() else { throw TiError(.ioFailed, "libarchive cannot allocate an entry") }
    defer { archive_entry_free(entry) }
    archive_entry_set_pathname(entry, name)
    archive_entry_set_size(entry, la_int64_t(size))
    archive_entry_set_filetype(entry, carchive_regular_file)
    archive_entry_set_perm(entry, 0o644)
    archive_entry_set_mtime(entry, time_t(modified), 0)
    guard archive_write_header(archive, entry) == carchive_ok else { throw failure("cannot add \(name)") }
  }

  private func write(_ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
      let written = archive_write_data(archive, bytes.baseAddress! + offset, bytes.count - offset)
      guard written > 0 else { throw failure("cannot write \(url.path)") }
      offset += written
    }
  }

  private func failure(_ what: String) -> TiError {
    let detail = archive_error_string(archive).map { String(cString: $0) } ?? "unknown error"
    return TiError(.ioFailed, "\(what): \(detail)")
  }
}
