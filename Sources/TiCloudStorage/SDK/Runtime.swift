import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// The state every SDK object shares: the configuration, the work root, what is in use (for
/// `shutdown`), the callback queues and which objects' callbacks run right now (rules.md L24).
///
/// One lock guards it and the facade objects' own state: the seed's rules relate objects to each other
/// (bindings, `inUse`), and one lock keeps those relations consistent. Callbacks never run under it.
final class Runtime: @unchecked Sendable {
  static let shared = Runtime()

  struct Configuration: Equatable, Sendable {
    var appId: String
    var endpoint: String
    var consoleLogEnabled: Bool
    var workRoot: URL

    /// A service's configuration: the work root in `cacheDirectory` (else the default), an empty
    /// endpoint meaning the work root's embedded library.
    init(appId: String, endpoint: String, consoleLogEnabled: Bool, cacheDirectory: String?) {
      let root = cacheDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? Runtime.defaultWorkRoot()
      self.appId = appId
      self.endpoint = endpoint.isEmpty ? Runtime.defaultEndpoint(workRoot: root) : endpoint
      self.consoleLogEnabled = consoleLogEnabled
      workRoot = root.standardizedFileURL
    }

    /// Whether it agrees with `other` on what services of one runtime share: the work root and the
    /// console log (L18).
    func sharesSettings(with other: Configuration) -> Bool {
      workRoot == other.workRoot && consoleLogEnabled == other.consoleLogEnabled
    }
  }

  // The package's `Lock` (a pthread mutex): `LockTally` counts it where a test measures a path.
  private let lock = Lock()
  // Guarded by `lock`.
  private(set) var configuration: Configuration?
  /// The token of the instance made or given a token last (under the lock): what a log upload shows
  /// the cloud, whose upload route takes a device token (docs/security.md).
  var latestToken: String?
  /// Sibling services sharing the runtime, by name (L17–L19).
  private var siblings: [String: Configuration] = [:]
  /// Bumped by every successful `initialize`: an object of an earlier session is shut down (L23).
  private(set) var session = 0

  /// The session an object made now belongs to (L23: the runtime it was created under): the running
  /// one, or, before `initialize` and after `shutdown`, the next one.
  var sessionOfNewObjects: Int { configuration != nil ? session : session &+ 1 }
  /// Objects that hold resources: used and not disposed instances, Replays and Outputs (L21, L22).
  private var holders: Set<ObjectIdentifier> = []
  /// Queries, snapshots, tasks and uploads under way.
  private var operations = 0
  /// Snapshots being encoded and written.
  private var snapshots = 0
  /// Exports running or with a completion to deliver.
  private var exports = 0
  /// True from an accepted log upload until its completion was delivered.
  private(set) var uploading = false
  /// The raw dump capturing now, if any (one at a time, X6).
  private var rawDump: ObjectIdentifier?
  /// The most snapshots encoded at once, SDK-wide (S10).
  private var maximumSnapshots = TiCloudStorage.maximumConcurrentSnapshots
  /// Objects whose callback runs on a thread now, by thread.
  private var scopes: [UInt: Set<ObjectIdentifier>] = [:]
  private(set) var service: (any RecordingService)?
  private(set) var log: RuntimeLog?

  /// The shared serial background queue (rules.md L27).
  let background = DispatchQueue(label: "tirtc.cloudstorage.background")

  /// Where each new Replay runs its graphs, whatever its pace; tests put a manual executor and a virtual
  /// clock here.
  var makeReplayEnvironment: (@Sendable () -> ReplayEnvironment)? {
    get { withLock { replayEnvironmentOverride } }
    set { withLock { replayEnvironmentOverride = newValue } }
  }
  private var replayEnvironmentOverride: (@Sendable () -> ReplayEnvironment)?

  /// A new Replay's environment at `pace` (under the lock): a thread of its own and the monotonic clock
  /// (slewed to follow an audio device that says how long it holds its sound), or a free-running clock.
  func replayEnvironmentLocked(pace: TiCloudStorageReplayPace) -> ReplayEnvironment {
    if let replayEnvironmentOverride { return replayEnvironmentOverride() }
    let clock: any PipelineClock =
      pace == .realtime ? SlewedClock(base: MonotonicClock()) : VirtualClock(freeRunning: true)
    return ReplayEnvironment(
      executor: ThreadExecutor(name: "tirtc.replay"), clock: clock, workers: WorkerPool.shared, deliver: { $0() })
  }

  /// Runs `body` under the SDK's lock.
  func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }

  // MARK: Lifecycle

  /// `initialize`: ok when it configured the runtime (or the same configuration was already running).
  func initialize(appId: String, endpoint: String, consoleLogEnabled: Bool, cacheDirectory: String?) -> Int32 {
    guard !appId.isEmpty else { return TiCloudStorageErrorCode.invalidArgument }
    let wanted = Configuration(
      appId: appId, endpoint: endpoint, consoleLogEnabled: consoleLogEnabled, cacheDirectory: cacheDirectory)
    let endpoint = wanted.endpoint
    if let refusal = withLock({ conflict(with: wanted) }) { return refusal }
    let service: any RecordingService
    do {
      service = try withLock { serviceOverride } ?? recordingService(endpoint: endpoint)
    } catch {
      return TiCloudStorageErrorCode.invalidArgument
    }
    guard let log = sharedLog(for: wanted) else { return TiErrorCode.workDirectoryUnavailable.rawValue }
    // Another thread may have initialized in between: the first configuration wins.
    let raced = withLock { () -> Int32? in
      if let refusal = conflict(with: wanted) { return refusal }
      if configuration == wanted { return TiCloudStorageErrorCode.ok }
      configuration = wanted
      session += 1
      self.service = service
      self.log = log
      return nil
    }
    if let raced { return raced }
    // What recordings of a process that died left unfinished (the result never came: nobody owns them).
    OutputFile.removeStaleWorkingFiles(in: wanted.workRoot.appendingPathComponent("media", isDirectory: true))
    log.write("initialized: appId \(appId), endpoint \(Self.redacted(endpoint)), work root \(wanted.workRoot.path)")
    return TiCloudStorageErrorCode.ok
  }

  /// Why `wanted` cannot run now (under the lock): ok when it already runs, alreadyInitialized for another
  /// configuration of this service or for shared settings (work root, console log) other than a
  /// sibling's (L14, L18); nil when it can start.
  private func conflict(with wanted: Configuration) -> Int32? {
    if let running = configuration {
      return running == wanted ? TiCloudStorageErrorCode.ok : TiCloudStorageErrorCode.alreadyInitialized
    }
    guard let shared = siblings.values.first else { return nil }
    return shared.sharesSettings(with: wanted) ? nil : TiCloudStorageErrorCode.alreadyInitialized
  }

  /// The log of the running runtime (a sibling's), or a new one for `wanted`'s work root, which is made
  /// first; nil when it cannot be made.
  private func sharedLog(for wanted: Configuration) -> RuntimeLog? {
    if let running = withLock({ siblings.isEmpty ? nil : log }) { return running }
    do {
      try Self.prepare(wanted.workRoot)
      return try RuntimeLog(
        directory: wanted.workRoot.appendingPathComponent("logs"), console: wanted.consoleLogEnabled)
    } catch {
      return nil
    }
  }

  // MARK: Sibling services

  /// A sibling service that shares the runtime (the seed's live TiRTC SDK, not part of this project):
  /// starts it under `name` with its own app id and endpoint and the shared work root and console log
  /// (L17). ok when it started or runs with that configuration; alreadyInitialized when it runs with
  /// another one or the shared settings differ from the running runtime's (L18); 6044 when the work
  /// root cannot be made. The runtime — its log and work root — stays up while any service runs (L19).
  func initializeSibling(
    _ name: String, appId: String, endpoint: String, consoleLogEnabled: Bool, cacheDirectory: String?
  ) -> Int32 {
    guard !name.isEmpty, !appId.isEmpty else { return TiCloudStorageErrorCode.invalidArgument }
    let wanted = Configuration(
      appId: appId, endpoint: endpoint, consoleLogEnabled: consoleLogEnabled, cacheDirectory: cacheDirectory)
    func conflict() -> Int32? {
      if let running = siblings[name] {
        return running == wanted ? TiCloudStorageErrorCode.ok : TiCloudStorageErrorCode.alreadyInitialized
      }
      guard let shared = configuration ?? siblings.values.first else { return nil }
      return shared.sharesSettings(with: wanted) ? nil : TiCloudStorageErrorCode.alreadyInitialized
    }
    if let refusal = withLock(conflict) { return refusal }
    let running = withLock { configuration != nil || !siblings.isEmpty ? log : nil }
    guard let log = running ?? sharedLog(for: wanted) else { return TiErrorCode.workDirectoryUnavailable.rawValue }
    let raced = withLock { () -> Int32? in
      if let refusal = conflict() { return refusal }
      siblings[name] = wanted
      self.log = log
      return nil
    }
    if let raced { return raced }
    log.write("\(name) initialized: appId \(appId), endpoint \(Self.redacted(endpoint))")
    return TiCloudStorageErrorCode.ok
  }

  /// Stops the sibling service `name` (idempotent); the runtime stays up while another service runs.
  func shutdownSibling(_ name: String) {
    let log = withLock { () -> RuntimeLog? in
      guard siblings.removeValue(forKey: name) != nil else { return nil }
      defer { if configuration == nil && siblings.isEmpty { self.log = nil } }
      return self.log
    }
    log?.write("\(name) shut down")
  }

  /// Whether the sibling service `name` runs, with its configuration.
  func sibling(_ name: String) -> Configuration? { withLock { siblings[name] } }

  /// Forgets everything (tests: one test's leftovers must not block the next one's `initialize`).
  func reset() {
    withLock {
      configuration = nil
      siblings.removeAll()
      service = nil
      log = nil
      holders.removeAll()
      operations = 0
      snapshots = 0
      exports = 0
      rawDump = nil
      uploading = false
    }
  }

  /// `shutdown`: ok when nothing is in use (idempotent); `inUse` otherwise or inside a callback.
  func shutdown() -> Int32 {
    let outcome = withLock { () -> (Int32, RuntimeLog?) in
      guard configuration != nil else { return (TiCloudStorageErrorCode.ok, nil) }
      guard holders.isEmpty, operations == 0, scopes[Self.thread] == nil else {
        return (TiCloudStorageErrorCode.inUse, nil)
      }
      configuration = nil
      service = nil
      let log = self.log
      // A sibling service keeps the runtime (its log) up (L19).
      if siblings.isEmpty { self.log = nil }
      return (TiCloudStorageErrorCode.ok, log)
    }
    outcome.1?.write("shut down")
    return outcome.0
  }

  /// The work root of the running configuration.
  var workRoot: URL? { withLock { configuration?.workRoot } }

  /// Lets tests change the snapshot limit.
  func setMaximumSnapshots(_ limit: Int) { withLock { maximumSnapshots = limit } }

  /// Where snapshots are encoded and written (tests hold it to keep one pending).
  var snapshotQueue: DispatchQueue = .global()

  /// The bytes a recording task may have waiting to be written before it is overrun (tests lower it).
  var recorderPendingLimit = 64 << 20

  /// A service that replaces the endpoint's at the next `initialize` (tests: a local library read on
  /// a manual executor).
  var serviceOverride: (any RecordingService)?

  // MARK: Sessions and holders

  /// ok when `holder` may act in the running session (its own, given at its creation; binding it at its
  /// first use for what has none, and
  /// from then on holding resources until ``release(_:)``); notInitialized before `initialize`, after
  /// `shutdown`, or when it was used before a `shutdown`. Call under the lock.
  func admit(_ session: inout Int?, holder: AnyObject?) -> Int32 {
    guard configuration != nil else { return TiCloudStorageErrorCode.notInitialized }
    if let bound = session, bound != self.session { return TiCloudStorageErrorCode.notInitialized }
    session = self.session
    if let holder { holders.insert(ObjectIdentifier(holder)) }
    return TiCloudStorageErrorCode.ok
  }

  /// `object` no longer holds resources (under the lock).
  func release(_ object: AnyObject) { holders.remove(ObjectIdentifier(object)) }

  /// An operation (query, snapshot, task, upload) starts; blocks `shutdown` until it ends (under the lock).
  func beginOperation() { operations += 1 }

  /// An operation ended (under the lock).
  func endOperation() { operations -= 1 }

  /// A snapshot starts, unless the SDK-wide limit is reached (under the lock); it counts as an
  /// operation for `shutdown` (S11).
  func beginSnapshot() -> Bool {
    guard snapshots < maximumSnapshots else { return false }
    snapshots += 1
    operations += 1
    return true
  }

  /// A snapshot ended (under the lock).
  func endSnapshot() {
    snapshots -= 1
    operations -= 1
  }

  /// An export starts, unless ``TiCloudStorage/maximumConcurrentExports`` run (under the lock).
  func beginExport() -> Bool {
    guard exports < TiCloudStorage.maximumConcurrentExports else { return false }
    exports += 1
    operations += 1
    return true
  }

  /// An export ended, its completion delivered (under the lock).
  func endExport() {
    exports -= 1
    operations -= 1
  }

  /// A log upload starts, unless one runs (under the lock); it counts as an operation for `shutdown`.
  func beginUpload() -> Bool {
    guard !uploading else { return false }
    uploading = true
    operations += 1
    return true
  }

  /// A log upload's completion was delivered.
  func endUpload() {
    withLock {
      uploading = false
      operations -= 1
    }
  }

  /// A raw dump starts, unless another one runs (under the lock).
  func beginRawDump(_ dump: AnyObject) -> Bool {
    guard rawDump == nil else { return false }
    rawDump = ObjectIdentifier(dump)
    return true
  }

  /// A raw dump ended.
  func endRawDump(_ dump: AnyObject) {
    withLock { if rawDump == ObjectIdentifier(dump) { rawDump = nil } }
  }

  /// Where raw dumps go: `dumps/` under the work root (under the lock).
  var dumpsDirectory: URL? { configuration?.workRoot.appendingPathComponent("dumps", isDirectory: true) }

  /// Where returned media files go: `media/` under the work root (under the lock).
  var mediaDirectory: URL? { configuration?.workRoot.appendingPathComponent("media", isDirectory: true) }

  // MARK: Callbacks

  private static var thread: UInt { UInt(pthread_self()) }

  /// True while a callback of one of `objects` runs on this thread (under the lock).
  func insideCallback(of objects: [AnyObject]) -> Bool {
    guard let scope = scopes[Self.thread] else { return false }
    return objects.contains { scope.contains(ObjectIdentifier($0)) }
  }

  /// Runs `body` later on `queue`, as a callback of `objects` (their `stop`/`detach`/`dispose` and
  /// `shutdown` are refused inside it).
  func deliver(on queue: DispatchQueue, for objects: [AnyObject], _ body: @escaping @Sendable () -> Void) {
    let identifiers = Set(objects.map(ObjectIdentifier.init))
    deliver(on: queue, forObjectsOf: { identifiers }, body)
  }

  /// Runs `body` on `queue` as a callback of the objects `objects` names, asked under the lock when the
  /// callback runs (not where it was queued: a replay's position reports leave its graph's thread
  /// without taking this lock).
  func deliver(
    on queue: DispatchQueue, forObjectsOf objects: @escaping @Sendable () -> Set<ObjectIdentifier>,
    _ body: @escaping @Sendable () -> Void
  ) {
    queue.async { [self] in
      let thread = Self.thread
      let outer = withLock { () -> Set<ObjectIdentifier>? in
        let outer = scopes[thread]
        scopes[thread] = (outer ?? []).union(objects())
        return outer
      }
      body()
      withLock { scopes[thread] = outer }
    }
  }

  /// The queue of `thread`.
  func queue(_ thread: TiCloudStorageCallbackThread) -> DispatchQueue {
    thread == .main ? .main : background
  }
}
