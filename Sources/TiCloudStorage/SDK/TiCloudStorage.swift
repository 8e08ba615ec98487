import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// The seed's `TiCloudStorage`: the runtime (`initialize`, `shutdown`, `errorToString`) and, as an
/// instance, one device reached with its token (rules.md groups L, D, Q).
///
/// Methods may be called from any thread and return at once; list completions run on the main queue
/// and the async list forms resume on the main actor. The main queue on Linux is the main dispatch
/// queue: a command-line program or a server runs it with `dispatchMain()` (or an async `main`, or a
/// `RunLoop.main.run()`), as the `tipipe` tool does.
public final class TiCloudStorage: @unchecked Sendable {
  // MARK: Runtime

  /// The most snapshots the SDK encodes at once; one more completes with resourceExhausted (S10).
  public static let maximumConcurrentSnapshots = 4

  /// A raw dump ends by itself after this long on its Replay's clock: 5 minutes (X6).
  public static let maximumRawDumpDurationMs: Int64 = 300_000

  /// A raw dump ends by itself before its files would hold more than this: 1 GiB (X6).
  public static let maximumRawDumpBytes: Int64 = 1 << 30

  /// The most raw dump folders kept in the cache: starting a dump removes the oldest beyond it.
  public static let retainedRawDumps = 4

  /// Initializes the runtime with the default endpoint (the embedded local library `library/` of the
  /// work root) and no console log (L8). invalidArgument for an empty `appId` (L9).
  public static func initialize(appId: String) -> Int32 {
    initialize(appId: appId, endpoint: "", consoleLogEnabled: false)
  }

  /// Initializes the runtime: `endpoint` is `http(s)://host[:port]` (the cloud API) or `file:///dir` (a
  /// local library), empty for the default (L10); `consoleLogEnabled` copies the log to standard error
  /// (L11). The work root is `$XDG_CACHE_HOME/tirtc` (else `~/.cache/tirtc`).
  ///
  /// - Returns: ok; ok again for the same configuration (L14); alreadyInitialized (6022) for another one
  ///   while running, which is left untouched (L15); 6044 when the work root cannot be created or
  ///   opened (L12); invalidArgument for an empty `appId` or an endpoint that is not such a URL.
  public static func initialize(appId: String, endpoint: String, consoleLogEnabled: Bool) -> Int32 {
    Runtime.shared.initialize(
      appId: appId, endpoint: endpoint, consoleLogEnabled: consoleLogEnabled, cacheDirectory: nil)
  }

  /// The work root the SDK uses when no `cacheDirectory` is given: `$XDG_CACHE_HOME/tirtc`, else
  /// `~/.cache/tirtc` (the Linux place of the seed's `NSCachesDirectory/tirtc`).
  public static var defaultCacheDirectory: String { Runtime.defaultWorkRoot().path }

  /// ``initialize(appId:endpoint:consoleLogEnabled:)`` with the work root in `cacheDirectory` (a Linux
  /// addition: services and tests choose where the cache lives).
  public static func initialize(appId: String, endpoint: String, consoleLogEnabled: Bool, cacheDirectory: String)
    -> Int32
  {
    Runtime.shared.initialize(
      appId: appId, endpoint: endpoint, consoleLogEnabled: consoleLogEnabled, cacheDirectory: cacheDirectory)
  }

  /// Shuts the runtime down: ok, also when never initialized or already shut down (L20); inUse while an
  /// instance, Replay or Output that was used is not disposed, or a query, snapshot or task is under
  /// way, or inside an SDK callback (L21, L24). Files stay valid (F8).
  public static func shutdown() -> Int32 { Runtime.shared.shutdown() }

  /// The stable name of `code` (its constant's name; `code<N>` for an undocumented one), for logs;
  /// works without `initialize` (L36, L37).
  public static func errorToString(_ code: Int32) -> String { TiErrorCode(rawValue: code).name }

  /// The work root while the runtime runs (logs in `logs/`, returned files in `media/`), else nil.
  public static var cacheDirectory: String? { Runtime.shared.workRoot?.path }

  // MARK: Instance

  private let runtime = Runtime.shared
  // Guarded by the runtime's lock.
  private var token: String
  private var tokenExpired = false
  /// The runtime session it belongs to (L23), from its creation.
  private(set) var session: Int?
  private var disposed = false
  private var pendingQueries = 0
  private var replays: [ObjectIdentifier: TiCloudStorageReplay] = [:]

  /// An instance for the device `token` gives access to; no network, never fails (D1, L6).
  public init(token: String) {
    self.token = token
    session = Runtime.shared.withLock {
      if !token.isEmpty { Runtime.shared.latestToken = token }
      return Runtime.shared.sessionOfNewObjects
    }
  }

  /// Uses `token` for the Lists, Plays and Exports started from now on (D4, D5): ok; invalidArgument
  /// for an empty token, which keeps the old one (D6); the same token again keeps its expired state
  /// (D7); notInitialized after dispose (D16).
  public func updateToken(_ token: String) -> Int32 {
    runtime.withLock {
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return code }
      guard !token.isEmpty else { return TiCloudStorageErrorCode.invalidArgument }
      if token != self.token {
        self.token = token
        tokenExpired = false
      }
      runtime.latestToken = token
      return TiCloudStorageErrorCode.ok
    }
  }

  /// A new Replay of this device, its callbacks on `.main` (D12, R7).
  public func createReplay() -> TiCloudStorageReplay { createReplay(callbackThread: .main) }

  /// A new Replay of this device, its callbacks on the chosen queue (D12, R7). On a disposed instance
  /// or before `initialize` its methods return notInitialized (D13).
  public func createReplay(callbackThread: TiCloudStorageCallbackThread) -> TiCloudStorageReplay {
    createReplay(callbackThread: callbackThread, pace: .realtime)
  }

  /// A new Replay of this device whose clock runs at `pace` (a Linux addition: `.asFastAsPossible` keeps
  /// every rule of a real-time replay on a free-running clock), its callbacks on the chosen queue.
  public func createReplay(
    callbackThread: TiCloudStorageCallbackThread, pace: TiCloudStorageReplayPace
  ) -> TiCloudStorageReplay {
    let replay = TiCloudStorageReplay(instance: self, callbackThread: callbackThread, pace: pace)
    runtime.withLock { if !disposed { replays[ObjectIdentifier(replay)] = replay } }
    return replay
  }

  /// Releases the instance: inUse while a query is pending, a Replay of it is not disposed, an export
  /// runs or a callback waits, or inside its own callback (D14, L24); the instance and its token stay
  /// usable then (D15). ok when already disposed (L32).
  public func dispose() -> Int32 {
    runtime.withLock {
      guard !disposed else { return TiCloudStorageErrorCode.ok }
      guard pendingQueries == 0, replays.isEmpty, activeExports == 0, !runtime.insideCallback(of: [self]) else {
        return TiCloudStorageErrorCode.inUse
      }
      disposed = true
      runtime.release(self)
      return TiCloudStorageErrorCode.ok
    }
  }

  // MARK: Queries

  /// The recording ranges of `[startTimeMs, endTimeMs)` (Q1–Q11), resuming on the main actor (Q12);
  /// cancelling the task ends it with cancelled (Q18).
  @MainActor
  public func listRecordings(startTimeMs: Int64, endTimeMs: Int64) async -> TiCloudStorageRecordingRangesResult {
    let start = beginQuery()
    guard case .success(let (service, token)) = start else {
      return TiCloudStorageRecordingRangesResult(code: start.failureCode, recordings: [])
    }
    let result = await RecordingQueries.listRecordings(
      service: service, token: token, startMs: startTimeMs, endMs: endTimeMs)
    endQuery(token: token, result.failureCode)
    return Self.rangesResult(result)
  }

  /// The recording ranges of `[startTimeMs, endTimeMs)`: every outcome, argument errors included,
  /// through `completion`, exactly once, on the main queue (Q13).
  public func listRecordings(
    startTimeMs: Int64, endTimeMs: Int64,
    completion: @escaping @MainActor @Sendable (TiCloudStorageRecordingRangesResult) -> Void
  ) {
    let start = beginQuery()
    guard case .success(let (service, token)) = start else {
      return deliver(
        TiCloudStorageRecordingRangesResult(code: start.failureCode, recordings: []), to: completion, pending: false)
    }
    RecordingQueries.listRecordings(service: service, token: token, startMs: startTimeMs, endMs: endTimeMs) {
      [self] result in
      endQuery(token: token, result.failureCode, keepsPending: true)
      deliver(Self.rangesResult(result), to: completion, pending: true)
    }
  }

  /// Every day from `startDate` to `endDate` (strict `YYYY-MM-DD`, at most 31) with whether it holds a
  /// recording in `timeZoneId` (Q20–Q27), resuming on the main actor (Q28).
  @MainActor
  public func listRecordingDays(startDate: String, endDate: String, timeZoneId: String = "Asia/Shanghai") async
    -> TiCloudStorageRecordingDaysResult
  {
    let start = beginQuery()
    guard case .success(let (service, token)) = start else {
      return TiCloudStorageRecordingDaysResult(code: start.failureCode, days: [])
    }
    let result = await RecordingQueries.listRecordingDays(
      service: service, token: token, startDate: startDate, endDate: endDate, timeZoneId: timeZoneId)
    endQuery(token: token, result.failureCode)
    return Self.daysResult(result)
  }

  /// `listRecordingDays` in "Asia/Shanghai", completing once on the main queue (Q24, Q28).
  public func listRecordingDays(
    startDate: String, endDate: String,
    completion: @escaping @MainActor @Sendable (TiCloudStorageRecordingDaysResult) -> Void
  ) {
    listRecordingDays(startDate: startDate, endDate: endDate, timeZoneId: "Asia/Shanghai", completion: completion)
  }

  /// `listRecordingDays` in `timeZoneId`, completing once on the main queue (Q28).
  public func listRecordingDays(
    startDate: String, endDate: String, timeZoneId: String,
    completion: @escaping @MainActor @Sendable (TiCloudStorageRecordingDaysResult) -> Void
  ) {
    let start = beginQuery()
    guard case .success(let (service, token)) = start else {
      return deliver(
        TiCloudStorageRecordingDaysResult(code: start.failureCode, days: []), to: completion, pending: false)
    }
    RecordingQueries.listRecordingDays(
      service: service, token: token, startDate: startDate, endDate: endDate, timeZoneId: timeZoneId
    ) { [self] result in
      endQuery(token: token, result.failureCode, keepsPending: true)
      deliver(Self.daysResult(result), to: completion, pending: true)
    }
  }

  // MARK: Internals (under the runtime's lock unless said)

  private(set) var activeExports = 0

  var isDisposedLocked: Bool { disposed }

  /// Whether the instance can be used now; binds it to the session and notes that it holds resources.
  func admit() -> Int32 {
    guard !disposed else { return TiCloudStorageErrorCode.notInitialized }
    return runtime.admit(&session, holder: self)
  }

  /// The token a new List, Play or Export uses: invalidArgument when there is none (D2), tokenExpired
  /// once its expiry is known (D11).
  func tokenForNewOperation() -> Result<String, TiError> {
    guard !token.isEmpty else { return .failure(TiError.refused(TiCloudStorageErrorCode.invalidArgument)) }
    guard !tokenExpired else { return .failure(TiError.refused(TiCloudStorageErrorCode.tokenExpired)) }
    return .success(token)
  }

  /// `token` was reported expired by a List, Play or Export: while it is still the instance's token, new
  /// operations with it fail at once (D11).
  func noteExpired(_ token: String) {
    if token == self.token { tokenExpired = true }
  }

  func replayDisposed(_ replay: TiCloudStorageReplay) { replays[ObjectIdentifier(replay)] = nil }

  func exportStarted() { activeExports += 1 }
  func exportEnded() { activeExports -= 1 }

  /// Starts a query: the service and the token, or the code to complete with.
  private func beginQuery() -> Result<(any RecordingService, String), TiError> {
    runtime.withLock {
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      let token = tokenForNewOperation()
      guard case .success(let value) = token else { return .failure(TiError.refused(token.failureCode)) }
      pendingQueries += 1
      runtime.beginOperation()
      return .success((runtime.service!, value))
    }
  }

  /// A query ended with `code`; `keepsPending` when its completion is still to be delivered.
  private func endQuery(token: String, _ code: Int32, keepsPending: Bool = false) {
    runtime.withLock {
      if code == TiCloudStorageErrorCode.tokenExpired { noteExpired(token) }
      if !keepsPending {
        pendingQueries -= 1
        runtime.endOperation()
      }
    }
  }

  /// Delivers a completion on the main queue as a callback of the instance; a pending query ends once
  /// it has run (D14 counts callbacks waiting to be delivered).
  private func deliver<Value: Sendable>(
    _ value: Value, to completion: @escaping @MainActor @Sendable (Value) -> Void, pending: Bool
  ) {
    runtime.deliver(on: .main, for: [self]) { [self] in
      MainActor.assumeIsolated { completion(value) }
      if pending {
        runtime.withLock {
          pendingQueries -= 1
          runtime.endOperation()
        }
      }
    }
  }

  private static func rangesResult(_ result: Result<[MediaRange], TiError>) -> TiCloudStorageRecordingRangesResult {
    switch result {
    case .success(let ranges):
      TiCloudStorageRecordingRangesResult(
        code: TiCloudStorageErrorCode.ok, recordings: ranges.map(TiCloudStorageRecordingRange.init))
    case .failure(let error):
      TiCloudStorageRecordingRangesResult(code: error.code.rawValue, recordings: [], message: error.message)
    }
  }

  private static func daysResult(_ result: Result<[RecordingDay], TiError>) -> TiCloudStorageRecordingDaysResult {
    switch result {
    case .success(let days):
      TiCloudStorageRecordingDaysResult(
        code: TiCloudStorageErrorCode.ok,
        days: days.map { TiCloudStorageRecordingDay(date: $0.date, hasRecording: $0.hasRecording) })
    case .failure(let error):
      TiCloudStorageRecordingDaysResult(code: error.code.rawValue, days: [], message: error.message)
    }
  }
}

extension Result {
  /// The failure's code, ok for a success.
  var failureCode: Int32 {
    switch self {
    case .success: return TiCloudStorageErrorCode.ok
    case .failure(let failure):
      return TiError(failure).code.rawValue
    }
  }
}

extension TiCloudStorage {
  /// The serial queue the `.background` callbacks leave on (rules.md L27), for a test session that waits
  /// for them.
  package static var backgroundCallbackQueue: DispatchQueue { Runtime.shared.background }

  /// Test hooks (package-internal): shuts the runtime down whatever is in use, and sets where new Replays run their graphs, the service the next
  /// `initialize` uses instead of the endpoint's, and the snapshot limit.
  package static func configureForTesting(
    replayEnvironment: (@Sendable () -> ReplayEnvironment)?, service: (any RecordingService)?,
    maximumSnapshots: Int = maximumConcurrentSnapshots, recorderPendingLimit: Int = 64 << 20,
    snapshotQueue: DispatchQueue = .global()
  ) {
    let runtime = Runtime.shared
    runtime.reset()
    runtime.makeReplayEnvironment = replayEnvironment
    runtime.withLock {
      runtime.serviceOverride = service
      runtime.recorderPendingLimit = recorderPendingLimit
      runtime.snapshotQueue = snapshotQueue
    }
    runtime.setMaximumSnapshots(maximumSnapshots)
  }
}
