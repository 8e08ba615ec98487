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

/// The environment of every `tipipe` the tests launch: this process's, with the child's sanitizer
/// options and the tests' own cache.
public func tipipeEnvironment() -> [String: String] {
  var environment = ProcessInfo.processInfo.environment
  if let options = environment["TIPIPE_CHILD_ASAN_OPTIONS"] { environment["ASAN_OPTIONS"] = options }
  // Commands that run through the SDK facade keep its work root in the cache: the tests' own.
  environment["XDG_CACHE_HOME"] = childCacheHome.path
  return environment
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

  /// What a child's `ending` says, as text.
  public init(_ ending: ChildProcess.Ending) {
    self.init(
      status: ending.status, reason: ending.reason, stdout: String(decoding: ending.output, as: UTF8.self),
      stderr: String(decoding: ending.errors, as: UTF8.self))
  }
}

/// Starts `tipipe` with `arguments` (the tests' environment, merged with `environment`) in `directory`.
/// Under the address sanitizer's run the child gets the options in `TIPIPE_CHILD_ASAN_OPTIONS` (leak
/// detection on), whatever the test process itself runs with.
public func tipipeChild(
  _ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:], captureOutput: Bool = true,
  captureErrors: Bool = true, outputFile: String? = nil
) throws -> ChildProcess {
  try ChildProcess(
    try tipipeExecutable().path, arguments, environment: tipipeEnvironment().merging(environment) { $1 },
    directory: directory, captureOutput: captureOutput, captureErrors: captureErrors, outputFile: outputFile)
}

/// Runs `tipipe` with `arguments` to its end.
public func tipipe(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws
  -> Finished
{
  Finished(try tipipeChild(arguments, in: directory, environment: environment).finish())
}

/// Makes a beacon library at `library` with `tipipe synth` (320x240, a white flash and a beep at each
/// second from `start` for `seconds`), with nothing recorded in each of `gaps` (seconds from the start,
/// lengths in seconds): what the sync tests hold flashes and beeps against.
public func beaconLibrary(at library: URL, start: Int64, seconds: Int, gaps: [(at: Int, length: Int)] = []) throws {
  let made = try tipipe(
    [
      "synth", "--out", library.path, "--start", "\(start)", "--duration", "\(seconds)", "--size", "320x240",
      "--beacon", "--quiet",
    ] + gaps.flatMap { ["--gap", "\($0.at):\($0.length)"] })
  guard made.status == 0 else { throw JudgeFailure(what: "tipipe synth --beacon: \(made.stderr)") }
}
