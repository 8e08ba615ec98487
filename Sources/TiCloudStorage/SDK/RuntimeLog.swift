import Foundation
import PipelineGraph

/// The SDK's log: lines appended to `logs/cloudstorage.log` under the work root (kept whatever
/// `consoleLogEnabled` says), rotated at 4 MiB keeping three older files, and copied to standard error
/// when the console log is enabled (rules.md L11). Callers never pass tokens, keys or signatures.
final class RuntimeLog: @unchecked Sendable {
  /// The size at which the file is rotated.
  static let rotationBytes = 4 << 20
  /// How many rotated files are kept (`cloudstorage.log.1` … `.3`).
  static let keptFiles = 3

  let directory: URL
  let console: Bool
  private let lock = NSLock()
  private var handle: FileHandle
  private var size: Int

  var file: URL { directory.appendingPathComponent("cloudstorage.log") }

  init(directory: URL, console: Bool) throws {
    self.directory = directory
    self.console = console
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    (handle, size) = try Self.open(directory.appendingPathComponent("cloudstorage.log"))
  }

  deinit { try? handle.close() }

  private static func open(_ file: URL) throws -> (FileHandle, Int) {
    if !FileManager.default.fileExists(atPath: file.path) {
      guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
        throw CocoaError(.fileWriteUnknown)
      }
    }
    let handle = try FileHandle(forWritingTo: file)
    let size = Int(try handle.seekToEnd())
    return (handle, size)
  }

  /// Appends a line with its UTC time.
  func write(_ message: String) {
    // Messages quote what servers and callers sent: one line each, no terminal escapes.
    let line = "\(Date().formatted(.iso8601)) \(message.oneLine)\n"
    let data = Data(line.utf8)
    lock.withLock {
      if size + data.count > Self.rotationBytes { rotate() }
      try? handle.write(contentsOf: data)
      size += data.count
    }
    // A closed standard error loses the line (FileHandle's write would trap).
    if console { try? FileHandle.standardError.write(contentsOf: Data("tirtc: \(line)".utf8)) }
  }

  private func rotate() {
    try? handle.close()
    let manager = FileManager.default
    let path = file.path
    try? manager.removeItem(atPath: "\(path).\(Self.keptFiles)")
    for index in stride(from: Self.keptFiles - 1, through: 1, by: -1) {
      try? manager.moveItem(atPath: "\(path).\(index)", toPath: "\(path).\(index + 1)")
    }
    try? manager.moveItem(atPath: path, toPath: "\(path).1")
    if let reopened = try? Self.open(file) { (handle, size) = reopened }
  }
}
