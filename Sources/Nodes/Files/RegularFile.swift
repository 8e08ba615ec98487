import Foundation

/// Opens and reads only regular files, without ever blocking on what is not one.
///
/// A library's paths come from outside: an object or index path may name a FIFO (an `open` for reading
/// would wait for a writer forever), a device, a directory or a socket. The file is opened with
/// `O_NONBLOCK` and checked with `fstat` before a byte is read; the size is known before anything is
/// allocated.
struct RegularFile: ~Copyable {
  /// Why a file could not be read.
  enum Failure: Error, CustomStringConvertible {
    case missing
    case notRegular(kind: String)
    case sizeMismatch(actual: Int, expected: Int)
    case tooLarge(actual: Int, limit: Int)
    case shortRead(got: Int, expected: Int)
    case system(Int32)

    var description: String {
      switch self {
      case .missing: "does not exist"
      case .notRegular(let kind): "is a \(kind), not a regular file"
      case .sizeMismatch(let actual, let expected): "has \(actual) bytes, the index says \(expected)"
      case .tooLarge(let actual, let limit): "has \(actual) bytes, more than the \(limit) allowed"
      case .shortRead(let got, let expected): "ended after \(got) of \(expected) bytes"
      case .system(let code): String(cString: strerror(code))
      }
    }
  }

  let descriptor: Int32
  let size: Int

  /// Opens `path` for reading when it is a regular file.
  init(path: String) throws(Failure) {
    let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
    guard descriptor >= 0 else { throw errno == ENOENT || errno == ENOTDIR ? .missing : .system(errno) }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      let code = errno
      close(descriptor)
      throw .system(code)
    }
    guard status.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      throw .notRegular(kind: Self.kind(of: status.st_mode))
    }
    self.descriptor = descriptor
    size = Int(status.st_size)
  }

  deinit { close(descriptor) }

  /// Reads the whole file into `buffer` (at least ``size`` bytes).
  func read(into buffer: UnsafeMutableRawPointer) throws(Failure) {
    var done = 0
    while done < size {
      let count = pread(descriptor, buffer + done, size - done, off_t(done))
      if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
      if count < 0 { throw .system(errno) }
      if count == 0 { throw .shortRead(got: done, expected: size) }
      done += count
    }
  }

  /// The contents of the regular file at `path`, at most `maximumSize` bytes.
  static func contents(atPath path: String, maximumSize: Int) throws(Failure) -> Data {
    let file = try RegularFile(path: path)
    guard file.size <= maximumSize else { throw .tooLarge(actual: file.size, limit: maximumSize) }
    var data = Data(count: file.size)
    var failure: Failure?
    data.withUnsafeMutableBytes { raw in
      guard let base = raw.baseAddress else { return }
      do throws(Failure) { try file.read(into: base) } catch { failure = error }
    }
    if let failure { throw failure }
    return data
  }

  private static func kind(of mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "directory"
    case S_IFIFO: "FIFO"
    case S_IFCHR: "character device"
    case S_IFBLK: "block device"
    case S_IFSOCK: "socket"
    default: "special file"
    }
  }
}
