import Dispatch
import Foundation
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// How a command uses the SDK facade: the runtime initialized on the command's endpoint and work root,
/// one device instance, and the main queue — where the facade delivers completions — run by the main
/// thread while the command works on a thread of its own.
enum FacadeSession {
  /// The app id the command line initializes the SDK with.
  static let appId = "tipipe"

  /// The work root: `--cache DIR`, else the SDK's default (`$XDG_CACHE_HOME/tirtc` or `~/.cache/tirtc`).
  static func cacheDirectory(_ flags: FlagParser) throws -> URL {
    let path = flags.string("--cache") ?? TiCloudStorage.defaultCacheDirectory
    guard !path.isEmpty else { throw UsageError(message: "--cache must not be empty") }
    return URL(fileURLWithPath: path)
  }

  /// Runs `body` on a thread of its own while the main thread runs the main queue (`dispatchMain`,
  /// which never returns: nothing of the caller's frame may be needed later), and exits with its status.
  static func runOffMain(_ body: @escaping @Sendable () throws -> Int32) -> Never {
    let work = Thread {
      do {
        let status = try body()
        fflush(nil)
        exit(status)
      } catch let error as UsageError {
        fflush(nil)
        fail(usage: error.message)
      } catch {
        fflush(nil)
        fail(TiError(error))
      }
    }
    work.stackSize = 8 << 20
    work.start()
    dispatchMain()
  }

  /// Runs `body` off the main thread (``runOffMain(_:)``) with a device instance of `token` on
  /// `endpoint`, its work root in `cache`; the instance is disposed and the SDK shut down after it. When
  /// the SDK cannot start there (a work root that cannot be a directory), the command's `failureLines`
  /// for that error go to standard output before its error line (cli.md: a failed query still prints
  /// its JSON).
  static func run(
    endpoint: String, token: String, cache: URL, failureLines: @escaping @Sendable (TiError) -> [String] = { _ in [] },
    _ body: @escaping @Sendable (TiCloudStorage) throws -> Int32
  ) -> Never {
    runOffMain {
      let storage: TiCloudStorage
      do {
        storage = try open(endpoint: endpoint, token: token, cache: cache)
      } catch {
        for line in failureLines(TiError(error)) { StandardOutput.line(line) }
        throw error
      }
      defer { close(storage) }
      return try body(storage)
    }
  }

  /// Initializes the SDK for `endpoint` in `cache` and returns a device instance with `token`.
  static func open(endpoint: String, token: String, cache: URL) throws -> TiCloudStorage {
    let code = TiCloudStorage.initialize(
      appId: appId, endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: cache.path)
    guard code == TiCloudStorageErrorCode.ok else {
      throw TiError(TiErrorCode(rawValue: code), "TiCloudStorage.initialize failed for the work root \(cache.path)")
    }
    return TiCloudStorage(token: token)
  }

  /// Disposes `storage` and shuts the SDK down (what a command made is released by then).
  static func close(_ storage: TiCloudStorage) {
    _ = storage.dispose()
    _ = TiCloudStorage.shutdown()
    // Callbacks already queued for the main queue run (and drop what they hold) before the exit.
    waitOnMain { done in DispatchQueue.main.async { done(()) } }
  }

  /// Runs `start` (which calls back on the main queue) and waits for its one result.
  static func waitOnMain<Value: Sendable>(_ start: (@escaping @MainActor @Sendable (Value) -> Void) -> Void) -> Value {
    let result = Locked<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
    start { value in
      result.withLock { $0 = value }
      done.signal()
    }
    done.wait()
    return result.withLock { $0! }
  }

  /// Throws when a facade call did not return ok.
  static func check(_ code: Int32, _ what: String) throws {
    guard code == TiCloudStorageErrorCode.ok else { throw TiError(TiErrorCode(rawValue: code), "\(what) failed") }
  }

  /// A failure the facade reported with `code` (and its message when it has one).
  static func error(_ code: Int32, _ message: String?) -> TiError {
    TiError(TiErrorCode(rawValue: code), message ?? TiCloudStorage.errorToString(code))
  }

  /// From now on a signal ends the command at once with the cancelled line (a query has nothing to
  /// clean up).
  static func stopOnSignal() {
    Interruption.shared.onSignal { signal in
      StandardError.report(Interruption.cancellation(by: signal))
      _exit(1)
    }
  }

  /// Moves a file the SDK returned out of its cache to `destination` (F9): linked (or, across file
  /// systems, copied) beside `destination` first, renamed into place, and only then removed from the
  /// cache; only a regular file is replaced. On failure the file stays where it was, at `path`.
  static func move(_ path: String, to destination: URL) throws {
    do {
      try OutputFile.validate(destination)
    } catch let error as MediaError {
      throw TiError(.fileWriteFailed, error.message)
    }
    let temporary = OutputFile.workingPath(for: destination)
    if link(path, temporary) != 0 {
      do {
        try FileManager.default.copyItem(atPath: path, toPath: temporary)
      } catch {
        unlink(temporary)
        throw TiError(.fileWriteFailed, "cannot copy \(path) to \(destination.path): \(error.localizedDescription)")
      }
    }
    try OutputFile.install(temporary, at: destination)
    unlink(path)
  }
}
