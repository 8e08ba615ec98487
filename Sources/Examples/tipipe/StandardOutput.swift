import Foundation
import Nodes

/// Machine output (`spec/cli.md`: JSON on standard output), written with `write(2)` so that a closed
/// pipe, a full disk or a closed descriptor is an error the command reports, not a trap or a silent
/// loss (SIGPIPE is ignored from the first statement of `main`, see ``Interruption``).
enum StandardOutput {
  /// Writes all of `data`; the error when standard output cannot take it.
  static func write(_ data: Data) -> TiError? {
    data.withUnsafeBytes { bytes -> TiError? in
      var offset = 0
      while offset < bytes.count {
        let written = Glibc.write(1, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return TiError(.fileWriteFailed, "standard output: \(String(cString: strerror(errno)))")
        }
        offset += written
      }
      return nil
    }
  }

  /// Writes `text` and a line break; when that fails, the command fails (exit 1, its error line).
  static func line(_ text: String) {
    if let error = write(Data((text + "\n").utf8)) { fail(error) }
  }
}

/// Human text and error lines on standard error: a closed or full standard error loses them, and
/// nothing else happens (FileHandle's write would trap).
enum StandardError {
  static func write(_ data: Data) {
    data.withUnsafeBytes { bytes in
      var offset = 0
      while offset < bytes.count {
        let written = Glibc.write(2, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
      }
    }
  }
}
