import Foundation
import Nodes
import TiCloudStorage

/// Machine output (`spec/cli.md`: JSON on standard output), written with `write(2)` so that a closed
/// pipe, a full disk or a closed descriptor is an error the command reports, not a trap or a silent
/// loss (SIGPIPE is ignored from the first statement of `main`, see ``Interruption``).
enum StandardOutput {
  /// Standard output was closed when the process started (its descriptor now holds /dev/null).
  nonisolated(unsafe) private static var closedAtStart = false

  /// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed; notes a closed standard output.
  /// Call first, before any thread or file exists.
  static func reserveClosedStreams() {
    for descriptor: Int32 in [0, 1, 2] where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
      let opened = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
      if opened >= 0 && opened != descriptor {
        dup2(opened, descriptor)
        close(opened)
      }
      if descriptor == 1 { closedAtStart = true }
    }
  }

  /// Writes all of `data`; the error when standard output cannot take it.
  static func write(_ data: Data) -> TiError? {
    if closedAtStart { return TiError(.fileWriteFailed, "standard output: \(String(cString: strerror(EBADF)))") }
    return writeAll(data, to: 1).map {
      TiError(.fileWriteFailed, "standard output: \(String(cString: strerror($0)))")
    }
  }

  /// Writes `text` and a line break; when that fails, the command fails (exit 1, its error line).
  static func line(_ text: String) {
    if let error = write(Data((text + "\n").utf8)) { fail(error) }
  }

  /// Writes all of `data` to `descriptor`, again after a signal; the `errno` of a failure.
  static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
    data.withUnsafeBytes { bytes -> Int32? in
      var offset = 0
      while offset < bytes.count {
        let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return errno
        }
        offset += written
      }
      return nil
    }
  }
}

/// Human text and error lines on standard error: a closed or full standard error loses them, and
/// nothing else happens (FileHandle's write would trap).
enum StandardError {
  static func write(_ data: Data) { _ = StandardOutput.writeAll(data, to: 2) }

  /// `error: <name> (<code>): <message>` on one line: control characters in the message (a newline in
  /// an argument it quotes) are escaped, so that a script reading lines sees one.
  static func report(_ error: TiError) {
    write(Data("error: \(error.code.name) (\(error.code.rawValue)): \(error.message.oneLine)\n".utf8))
  }
}
