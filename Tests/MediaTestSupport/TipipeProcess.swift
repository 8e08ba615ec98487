import Dispatch
import Foundation

/// The `tipipe` executable of the same build as the running tests (so that the thread sanitizer's run
/// launches the sanitized binary), built first when missing.
public func tipipeExecutable() throws -> URL {
  let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  let sibling = testBinary.deletingLastPathComponent().appendingPathComponent("tipipe")
  if FileManager.default.isExecutableFile(atPath: sibling.path) { return sibling }
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  _ = try run("/usr/bin/env", ["swift", "build", "--package-path", root.path, "--product", "tipipe"])
  return root.appendingPathComponent(".build/debug/tipipe")
}

/// The cache home of every `tipipe` the tests launch (not the user's `~/.cache`).
public let childCacheHome = FileManager.default.temporaryDirectory.appendingPathComponent(
  "tipipe-tests-cache-\(getpid())")

/// A process that runs `tipipe`. Under the address sanitizer's run the child gets the options in
/// `TIPIPE_CHILD_ASAN_OPTIONS` (leak detection on), whatever the test process itself runs with.
public func tipipeProcess() throws -> Process {
  let process = Process()
  process.executableURL = try tipipeExecutable()
  var environment = ProcessInfo.processInfo.environment
  if let options = environment["TIPIPE_CHILD_ASAN_OPTIONS"] { environment["ASAN_OPTIONS"] = options }
  // Commands that run through the SDK facade keep its work root in the cache: the tests' own.
  environment["XDG_CACHE_HOME"] = childCacheHome.path
  process.environment = environment
  return process
}

/// How a `tipipe` run ended, and what it printed.
public struct Finished: Sendable {
  /// The exit status (or signal).
  public var status: Int32
  /// Exit or signal.
  public var reason: Process.TerminationReason
  /// Standard output.
  public var stdout: String
  /// Standard error.
  public var stderr: String

  /// A run's ending.
  public init(status: Int32, reason: Process.TerminationReason, stdout: String, stderr: String) {
    self.status = status
    self.reason = reason
    self.stdout = stdout
    self.stderr = stderr
  }
}

/// Runs `tipipe` with `arguments` to its end.
public func tipipe(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws
  -> Finished
{
  let process = try tipipeProcess()
  process.arguments = arguments
  process.environment?.merge(environment) { $1 }
  if let directory { process.currentDirectoryURL = directory }
  let output = Pipe()
  let errors = Pipe()
  process.standardOutput = output
  process.standardError = errors
  try process.run()
  // Both pipes are read to their end (stderr on another thread) so neither can fill and block the child.
  let errorText = LockedText()
  let group = DispatchGroup()
  DispatchQueue.global().async(group: group) {
    errorText.set(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
  }
  let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  group.wait()
  process.waitUntilExit()
  return Finished(
    status: process.terminationStatus, reason: process.terminationReason, stdout: text, stderr: errorText.value)
}

/// Text one thread sets and another reads.
public final class LockedText: @unchecked Sendable {
  private let lock = NSLock()
  private var text = ""
  /// Creates empty text.
  public init() {}
  /// Replaces the text.
  public func set(_ value: String) { lock.withLock { text = value } }
  /// The text.
  public var value: String { lock.withLock { text } }
}
