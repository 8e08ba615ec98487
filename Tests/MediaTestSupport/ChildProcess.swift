import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A command the tests run, started with `posix_spawn` and reaped with `waitpid`, under a deadline.
///
/// Not Foundation's `Process`: on Linux its `waitUntilExit()` waits in a run loop that has been seen to
/// sleep on after the child ended (a whole test run hung in it once), and its `run()` reads
/// `/proc/self/fd` to close every descriptor in the child (past ~1,300 open descriptors the address
/// sanitizer caught it reading out of bounds). Here the child gets only its three standard streams
/// (every descriptor this process opens itself is close-on-exec), the pipes are read to their end
/// with `poll`, and a child still running at the deadline is killed and reported.
public final class ChildProcess {
  /// How a run ended and what it wrote.
  public struct Ending: Sendable {
    /// The exit status, or the signal that ended it.
    public var status: Int32
    /// Exit or signal.
    public var reason: Process.TerminationReason
    /// Standard output (empty when not captured).
    public var output: Data
    /// Standard error (empty when not captured).
    public var errors: Data
  }

  /// A child that did not end before its deadline (it was killed).
  public struct TimedOut: Error, CustomStringConvertible {
    /// The command line.
    public let command: String
    /// How long it was given.
    public let deadline: Duration
    /// Says what ran too long.
    public var description: String { "\(command) still ran after \(deadline): killed" }
  }

  /// The child's process id.
  public let pid: pid_t
  private let command: String
  private var reading: [Int32: Data] = [:]
  private let outputDescriptor: Int32?
  private let errorDescriptor: Int32?
  private var ending: Ending?
  /// How long the child is given, and when that runs out.
  private let deadline: Duration
  private let limit: ContinuousClock.Instant
  /// What each stream said, once it closed.
  private var collected: [Int32: Data] = [:]
  /// The child's wait status, when ``hasEnded`` reaped it before ``finish()`` read its streams.
  private var reaped: Int32?

  /// Starts `executable` with `arguments` (and `environment`, by default this process's), in
  /// `directory` when given (through `env -C`); standard input is `/dev/null`, standard output and
  /// error are captured or thrown away — or standard output goes to `outputFile` when given (`/dev/full`
  /// for a full disk). The child is killed if it has not ended `deadline` after its start (a hang fails
  /// the test that waited, with the command line).
  public init(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: URL? = nil,
    captureOutput: Bool = true, captureErrors: Bool = true, outputFile: String? = nil,
    deadline: Duration = .seconds(900)
  ) throws {
    self.deadline = deadline
    limit = Self.now() + deadline
    let argv = directory.map { ["/usr/bin/env", "-C", $0.path, executable] + arguments } ?? [executable] + arguments
    command = argv.joined(separator: " ")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    Self.spawning.lock()
    var parentEnds: [Int32] = []
    var childEnds: [Int32] = []
    defer { for descriptor in childEnds { close(descriptor) } }
    func stream(_ target: Int32, captured: Bool) throws -> Int32? {
      guard captured else {
        posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
        return nil
      }
      var ends: [Int32] = [-1, -1]
      guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
      // Close-on-exec at once (pipe2 is not in Swift's Glibc): under `spawning`, no other child of ours
      // starts in between, and Foundation's close every descriptor in theirs.
      _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
      _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
      parentEnds.append(ends[0])
      childEnds.append(ends[1])
      posix_spawn_file_actions_adddup2(&actions, ends[1], target)
      return ends[0]
    }
    do {
      if let outputFile {
        posix_spawn_file_actions_addopen(&actions, 1, outputFile, O_WRONLY, 0)
        outputDescriptor = nil
      } else {
        outputDescriptor = try stream(1, captured: captureOutput)
      }
      errorDescriptor = try stream(2, captured: captureErrors)
    } catch {
      Self.spawning.unlock()
      for descriptor in parentEnds { close(descriptor) }
      throw error
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The child starts with every signal at its default and none blocked, whatever this process set.
    var all = sigset_t()
    sigfillset(&all)
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    let environmentLines = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    let cArguments = argv.map { strdup($0) } + [nil]
    let cEnvironment = environmentLines.map { strdup($0) } + [nil]
    defer {
      for pointer in cArguments + cEnvironment { free(pointer) }
    }
    var child: pid_t = 0
    let result = posix_spawn(&child, argv[0], &actions, &attributes, cArguments, cEnvironment)
    Self.spawning.unlock()
    guard result == 0 else {
      for descriptor in parentEnds { close(descriptor) }
      throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO)
    }
    pid = child
    for descriptor in parentEnds { reading[descriptor] = Data() }
  }

  deinit {
    for descriptor in reading.keys { close(descriptor) }
    if ending == nil && reaped == nil {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      _ = waitpid(pid, &status, 0)
    }
  }

  /// Sends `signal` to the child while it has not been reaped.
  public func signal(_ signal: Int32) {
    if ending == nil && reaped == nil { kill(pid, signal) }
  }

  /// Whether the child has ended (it is reaped then; ``finish()`` still reads what its streams say).
  /// Does not wait.
  public var hasEnded: Bool {
    if ending != nil || reaped != nil { return true }
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return false }
    reaped = status
    return true
  }

  /// One of the child's captured output streams.
  public enum Stream: Sendable {
    /// Standard output.
    case output
    /// Standard error.
    case errors
  }

  /// Calls `body` with each line the child writes on `stream` as it comes (the other stream is read
  /// meanwhile, so neither pipe fills), until `body` returns false or the stream ends. Everything read
  /// stays in the ``Ending`` that ``finish()`` returns.
  public func readLines(of stream: Stream, _ body: (String) throws -> Bool) throws {
    guard let descriptor = stream == .output ? outputDescriptor : errorDescriptor else { return }
    var delivered = 0
    var more = true
    while more {
      let data = reading[descriptor] ?? collected[descriptor] ?? Data()
      while more, let newline = data[(data.startIndex + delivered)...].firstIndex(of: 0x0A) {
        more = try body(String(decoding: data[(data.startIndex + delivered)..<newline], as: UTF8.self))
        delivered = newline - data.startIndex + 1
      }
      guard more, reading[descriptor] != nil else { return }
      try pump(once: true)
    }
  }

  /// Reads what the child writes until it closes its streams, then waits for its end: at most the
  /// deadline given at the start in all, after which the child is killed and ``TimedOut`` thrown.
  public func finish() throws -> Ending {
    if let ending { return ending }
    try pump(once: false)
    if let reaped { return end(waitStatus: reaped) }
    var status: Int32 = 0
    var timedOut = false
    while true {
      let reaped = waitpid(pid, &status, timedOut ? 0 : WNOHANG)
      if reaped == pid { break }
      if reaped < 0 && errno != EINTR { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD) }
      if reaped == 0 {
        if Self.now() >= limit {
          timedOut = true
          kill(pid, SIGKILL)
        } else {
          // The streams are closed: the child is on its way out (or keeps running without them).
          usleep(2_000)
        }
      }
    }
    let ended = end(waitStatus: status)
    if timedOut { throw TimedOut(command: command, deadline: deadline) }
    return ended
  }

  /// Notes the child's end from `waitpid`'s status, with what its streams said.
  @discardableResult
  private func end(waitStatus status: Int32) -> Ending {
    let signal = status & 0x7f
    let ended = Ending(
      status: signal == 0 ? (status >> 8) & 0xff : signal, reason: signal == 0 ? .exit : .uncaughtSignal,
      output: outputDescriptor.flatMap { collected[$0] } ?? Data(),
      errors: errorDescriptor.flatMap { collected[$0] } ?? Data())
    ending = ended
    return ended
  }

  /// Reads the open streams until they all close (or, `once`, until something was read); past the
  /// deadline the child is killed, what was read is kept, and ``TimedOut`` thrown.
  private func pump(once: Bool) throws {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while !reading.isEmpty {
      var polled = reading.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
      let left = limit - Self.now()
      if left <= .zero {
        kill(pid, SIGKILL)
        for (descriptor, data) in reading {
          close(descriptor)
          collected[descriptor] = data
        }
        reading = [:]
        var status: Int32 = reaped ?? 0
        if reaped == nil { _ = waitpid(pid, &status, 0) }
        end(waitStatus: status)
        throw TimedOut(command: command, deadline: deadline)
      }
      let milliseconds = Int32(clamping: left.components.seconds * 1000 + 1)
      let ready = poll(&polled, nfds_t(polled.count), milliseconds)
      if ready < 0 && errno == EINTR { continue }
      for entry in polled where entry.revents != 0 {
        let count = read(entry.fd, &buffer, buffer.count)
        if count > 0 {
          reading[entry.fd]?.append(contentsOf: buffer[..<count])
        } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
          close(entry.fd)
          collected[entry.fd] = reading.removeValue(forKey: entry.fd)
        }
      }
      if once && ready > 0 { return }
    }
  }

  /// Held from a child's pipes to its start: no other child of ours inherits them meanwhile.
  private static let spawning = NSLock()

  private static func now() -> ContinuousClock.Instant { ContinuousClock.now }
}
