import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// The Ti Cloud Storage SDK under a test's control: its replays run on a manual executor against a
/// virtual clock, so that an application's tests play, pause, seek and complete without a wall clock —
/// the same steps in the same order on every run (as ExoPlayer's `FakeClock`).
///
/// A session configures the process's SDK and initializes it with a local library (`file://`: an
/// `index.json` and its objects, as `LibrarySynthesizer` writes them). Everything a replay does — reading
/// and verifying objects, decoding, presenting each frame at its instant, reporting the position, gaps and
/// completion — happens inside ``run(for:)``, for that much virtual time, and not otherwise; its callbacks
/// (on the main queue or the background one, as the replay was created) have run when ``run(for:)``
/// returns. The library is read on ``executor``: await a list query, an export or a snapshot through
/// ``awaiting(timeout:_:)``, which runs the executor meanwhile.
///
/// The SDK is one per process, so is a session: a second one cannot begin while one is live (run such
/// tests one at a time, as Swift Testing's `.serialized` does), and ``finish()`` ends it once the test
/// disposed what it created.
///
/// ```swift
/// let session = try TiCloudStorageTestSession(library: library, cacheDirectory: cache)
/// let device = TiCloudStorage(token: "any token")
/// let replay = device.createReplay()
/// // … bind an Output, replay.play(startTimeMs:endTimeMs:) …
/// await session.run(for: .seconds(5))  // five seconds of the replay, as fast as the machine goes
/// ```
@MainActor
public final class TiCloudStorageTestSession {
  /// Runs every job of the session's replays (graph nodes, their workers, the library's reads), on the
  /// thread that calls ``run(for:)`` or ``awaiting(timeout:_:)``.
  public let executor = ManualExecutor()
  /// The replays' clock: it moves only in ``run(for:)``.
  public let clock = VirtualClock()
  /// What `TiCloudStorage.initialize` returned (`TiCloudStorageErrorCode.ok` when the session can be used).
  public let initializeCode: Int32
  private var live = true

  /// Whether a session is live (the SDK is one per process).
  private static var active = false

  /// Why a session cannot begin or an operation did not end.
  public enum Failure: Error, Equatable {
    /// Another session is live: ``finish()`` it first (run such tests one at a time).
    case anotherSessionIsLive
    /// ``awaiting(timeout:_:)``'s operation did not end within its timeout.
    case timedOut
  }

  /// Configures the SDK to run its replays on ``executor`` and ``clock`` and initializes it with the local
  /// library in `library` as its endpoint and `cacheDirectory` as its work root.
  ///
  /// - Parameters:
  ///   - library: a directory holding `index.json` and its objects (spec/segment-format.md).
  ///   - cacheDirectory: the SDK's work root (its log, its `media/` folder).
  ///   - appId: the application id the SDK is initialized with.
  /// - Throws: ``Failure/anotherSessionIsLive`` while another session is live.
  public init(library: URL, cacheDirectory: URL, appId: String = "test") throws {
    guard !Self.active else { throw Failure.anotherSessionIsLive }
    Self.active = true
    // The callbacks leave as a manual environment's do: queued on the executor, never inside the call
    // that caused them (the facade then hands them to its queues).
    TiCloudStorage.configureForTesting(
      replayEnvironment: { [executor, clock] in .manual(executor: executor, clock: clock) },
      service: LocalLibraryService(directory: library, workers: executor))
    initializeCode = TiCloudStorage.initialize(
      appId: appId, endpoint: library.absoluteString, consoleLogEnabled: false, cacheDirectory: cacheDirectory.path)
  }

  /// Runs the replays for `duration` of virtual time — each job, and each timer as the clock reaches it,
  /// as fast as the machine goes — then lets the callbacks queued on the main and background queues run
  /// (a few rounds: a callback may queue another).
  public func run(for duration: Duration) async {
    let target = clock.now + duration
    executor.runUntilIdle(firingTimersOf: clock, through: target)
    clock.advance(to: target)
    executor.runUntilIdle()
    for _ in 0..<4 { await settle() }
  }

  /// Awaits `operation` — a list query, an export, a snapshot, anything that reads the library — while
  /// running the session's jobs (not moving its clock).
  ///
  /// - Throws: ``Failure/timedOut`` when it has not ended after `timeout` of real time (a lost completion
  ///   fails the test instead of hanging it); the operation is cancelled then.
  public func awaiting<Value: Sendable>(
    timeout: Duration = .seconds(60), _ operation: @escaping @MainActor () async -> Value
  ) async throws -> Value {
    let result = OneShot<Value>()
    let task = Task { @MainActor in result.set(await operation()) }
    let deadline = ContinuousClock.now + timeout
    while result.current == nil {
      guard ContinuousClock.now < deadline else {
        task.cancel()
        throw Failure.timedOut
      }
      executor.runUntilIdle()
      await settle()
    }
    await task.value
    return result.current!
  }

  /// Shuts the SDK down and ends the session: `TiCloudStorage.shutdown()`'s code. While an object the test
  /// made is alive that is `inUse` and the session stays live (dispose it and call again); once down, later
  /// initializations get the production executor and clock again.
  @discardableResult
  public func finish() -> Int32 {
    guard live else { return TiCloudStorageErrorCode.ok }
    let code = TiCloudStorage.shutdown()
    guard code == TiCloudStorageErrorCode.ok else { return code }
    TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
    live = false
    Self.active = false
    return code
  }

  /// Lets what the background queue holds run, then one turn of the main queue, then the executor's jobs.
  private func settle() async {
    TiCloudStorage.backgroundCallbackQueue.sync {}
    await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
    executor.runUntilIdle()
  }
}
