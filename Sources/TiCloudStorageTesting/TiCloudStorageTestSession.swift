import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// The Ti Cloud Storage SDK under a test's control: its replays run on a manual executor against a
/// virtual clock, so that an application's tests play, pause, seek and complete without a wall clock —
/// the same steps in the same order on every run (as ExoPlayer's `FakeClock`).
///
/// A session configures the process's SDK before initializing it with a local library (`file://`: an
/// `index.json` and its objects, as `LibrarySynthesizer` writes them): everything a replay does — reading
/// and verifying objects, decoding, presenting each frame at its instant, reporting the position, gaps and
/// completion — happens inside ``run(for:)``, for that much virtual time, and not otherwise. Callbacks reach
/// the main queue (or the background one) as in production; ``run(for:)`` lets the main queue's run before
/// it returns. Exports, snapshots and recording tasks keep their own threads: await their async forms.
///
/// One session at a time (the SDK is initialized once per process); ``finish()`` shuts the SDK down and
/// puts the production executor and clock back.
///
/// ```swift
/// let session = TiCloudStorageTestSession(library: library, cacheDirectory: cache)
/// let device = TiCloudStorage(token: "any token")
/// let replay = device.createReplay()
/// // … bind an Output, replay.play(startTimeMs:endTimeMs:) …
/// await session.run(for: .seconds(5))  // five seconds of the replay, as fast as the machine goes
/// ```
@MainActor
public final class TiCloudStorageTestSession {
  /// Runs every job of the session's replays (graph nodes, their workers, the callbacks' hand-off), on
  /// the thread that calls ``run(for:)``.
  public let executor = ManualExecutor()
  /// The replays' clock: it moves only in ``run(for:)``.
  public let clock = VirtualClock()
  /// What `TiCloudStorage.initialize` returned (`TiCloudStorageErrorCode.ok` when the session can be used).
  public let initializeCode: Int32

  /// Configures the SDK to run its replays on ``executor`` and ``clock`` and initializes it with the local
  /// library in `library` as its endpoint and `cacheDirectory` as its work root.
  ///
  /// - Parameters:
  ///   - library: a directory holding `index.json` and its objects (spec/segment-format.md).
  ///   - cacheDirectory: the SDK's work root (its log, its `media/` folder).
  ///   - appId: the application id the SDK is initialized with.
  public init(library: URL, cacheDirectory: URL, appId: String = "test") {
    let executor = self.executor
    let clock = self.clock
    // The library is read on the executor too: a transfer completes inside `run(for:)`, in order.
    TiCloudStorage.configureForTesting(
      replayEnvironment: { ReplayEnvironment(executor: executor, clock: clock, workers: executor, deliver: { $0() }) },
      service: LocalLibraryService(directory: library, workers: executor))
    initializeCode = TiCloudStorage.initialize(
      appId: appId, endpoint: library.absoluteString, consoleLogEnabled: false, cacheDirectory: cacheDirectory.path)
  }

  /// Runs the replays for `duration` of virtual time — each job, and each timer as the clock reaches it,
  /// as fast as the machine goes — then lets the callbacks queued on the main queue run (a few rounds: a
  /// callback may queue another).
  public func run(for duration: Duration) async {
    let target = clock.now + duration
    executor.runUntilIdle(firingTimersOf: clock, through: target)
    clock.advance(to: target)
    executor.runUntilIdle()
    for _ in 0..<4 {
      await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
      executor.runUntilIdle()
    }
  }

  /// Shuts the SDK down (`TiCloudStorage.shutdown()`'s code: `inUse` while an object is alive) and, once
  /// it is down, gives later initializations the production executor and clock again.
  @discardableResult
  public func finish() -> Int32 {
    let code = TiCloudStorage.shutdown()
    if code == TiCloudStorageErrorCode.ok { TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil) }
    return code
  }
}
