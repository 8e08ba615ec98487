import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import Testing
import TiCloudStorage

/// One synthetic library for the whole suite: 9 s from `recordingStart` with a hole at 3–4.5 s, video
/// on channel 0, audio on channel 1.
@MainActor let sharedLibrary: URL = {
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-sdk-library-\(getpid())")
  try? FileManager.default.removeItem(at: directory)
  try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  var options = smallOptions(seconds: 9)
  options.gaps = [(offset: 3, length: 1)]
  try! LibrarySynthesizer(options: options).write(to: directory)
  return directory
}()

/// The small test recording over 6 s whose picture goes from 320x240 to 160x120 at 3 s (the directory lives as long as the value).
func resolutionChangeLibrary(_ name: String) throws -> TemporaryDirectory {
  let library = try TemporaryDirectory(name)
  var options = smallOptions(seconds: 6)
  options.videoChanges = [.init(offsetSeconds: 3, codec: .h264, width: 160, height: 120)]
  try LibrarySynthesizer(options: options).write(to: library.url)
  return library
}

/// The SDK initialized on a fresh work root over the shared library, its Replays on a manual executor
/// and a virtual clock the test cranks; shut down (after the test disposed what it made) on `close()`.
@MainActor
final class SDKSession {
  let cache: TemporaryDirectory
  let executor = ManualExecutor()
  let clock = VirtualClock()
  let initializeCode: Int32

  let service: ScriptedService

  init(
    maximumSnapshots: Int = TiCloudStorage.maximumConcurrentSnapshots, recorderPendingLimit: Int = 64 << 20,
    library: URL? = nil, snapshotQueue: DispatchQueue = .global(), endpoint: String? = nil,
    cache: TemporaryDirectory? = nil
  ) throws {
    _ = mainQueueKey
    // A given cache: a later initialize over an earlier session's files (F3, F11).
    self.cache = try cache ?? TemporaryDirectory("tipipe-sdk-cache")
    let executor = self.executor
    let clock = self.clock
    service = ScriptedService(
      LocalLibraryService(directory: library ?? sharedLibrary, workers: executor), executor: executor)
    TiCloudStorage.configureForTesting(
      replayEnvironment: { ReplayEnvironment(executor: executor, clock: clock, workers: executor, deliver: { $0() }) },
      service: service, maximumSnapshots: maximumSnapshots, recorderPendingLimit: recorderPendingLimit,
      snapshotQueue: snapshotQueue)
    initializeCode = TiCloudStorage.initialize(
      appId: "test-app", endpoint: endpoint ?? sharedLibrary.absoluteString, consoleLogEnabled: false,
      cacheDirectory: self.cache.url.path)
  }

  /// The work root's `media` folder.
  var media: URL { cache.url.appendingPathComponent("media") }

  /// Runs graph jobs and timers for `duration` of clock time, then lets main-queue deliveries run.
  func run(for duration: Duration) async {
    let target = clock.now + duration
    executor.runUntilIdle(firingTimersOf: clock, through: target)
    clock.advance(to: target)
    executor.runUntilIdle()
    await drainMain()
  }

  /// Lets what was queued on the main queue run (callbacks queue further callbacks: a few rounds).
  func drainMain() async {
    for _ in 0..<4 {
      await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
      executor.runUntilIdle()
    }
  }

  /// Drains the main queue until `done` holds: a completion may pass through another queue first (a
  /// listing's argument error is answered from a global queue), which a slow run (sanitizers) makes
  /// later than a few rounds of the main queue.
  func drainMain(until done: () -> Bool) async {
    let deadline = ContinuousClock.now + testDeadline
    while !done() {
      guard ContinuousClock.now < deadline else {
        Issue.record(WaitTimedOut("a condition the main queue's deliveries should make true"))
        return
      }
      await drainMain()
    }
    await drainMain()
  }

  /// Runs the clock in steps of `step` until `done` holds; fails with what it waited for (`what`) once
  /// ``testDeadline`` of real time has passed (a lost completion fails the test instead of hanging it).
  func run(until what: String, step: Duration = .milliseconds(100), _ done: () -> Bool) async throws {
    let deadline = ContinuousClock.now + testDeadline
    while !done() {
      guard ContinuousClock.now < deadline else { throw WaitTimedOut(what) }
      await run(for: step)
    }
  }

  /// Awaits `body` while cranking the graphs' executor (the library is read on it).
  func pump<Value: Sendable>(_ body: @escaping @MainActor () async -> Value) async throws -> Value {
    let result = Locked<Value?>(nil)
    let task = Task { @MainActor in
      let value = await body()
      result.withLock { $0 = value }
    }
    let deadline = ContinuousClock.now + testDeadline
    while result.withLock({ $0 == nil }) {
      guard ContinuousClock.now < deadline else {
        task.cancel()
        throw WaitTimedOut("an SDK call's result")
      }
      await drainMain()
    }
    await task.value
    return result.withLock { $0! }
  }

  /// Shuts the SDK down; the test must have disposed everything it used.
  func close() -> Int32 { TiCloudStorage.shutdown() }
}

/// Marks the main queue: on Linux its blocks may run on a worker thread once the main thread is in
/// `dispatchMain()`, so `Thread.isMainThread` cannot tell.
let mainQueueKey: DispatchSpecificKey<Bool> = {
  let key = DispatchSpecificKey<Bool>()
  DispatchQueue.main.setSpecific(key: key, value: true)
  return key
}()

/// True on the main queue.
var onMainQueue: Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

/// What a Replay and its Outputs reported, in order (from any queue).
final class SDKLog: TiCloudStorageVideoOutputDelegate, TiCloudStorageAudioOutputDelegate, Sendable {
  enum Entry: Equatable, Sendable {
    case time(Int64)
    case gap(Int64, Int64)
    case completed
    case error(Int32)
    case video(TiCloudStorageVideoOutputState)
    case videoFailure(Int32)
    case videoSize(Int, Int)
    case audio(TiCloudStorageAudioOutputState)
    case audioFailure(Int32)
  }
  private let storage = Locked<[(entry: Entry, onMain: Bool)]>([])

  func watch(_ replay: TiCloudStorageReplay) {
    replay.onTimeChanged = { [self] ms in record(.time(ms)) }
    replay.onRecordingGap = { [self] gap in record(.gap(gap.range.startTimeMs, gap.range.endTimeMs)) }
    replay.onCompleted = { [self] in record(.completed) }
    replay.onError = { [self] code in record(.error(code)) }
  }

  func record(_ entry: Entry) {
    let main = onMainQueue
    storage.withLock { $0.append((entry, main)) }
  }

  func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeState state: TiCloudStorageVideoOutputState) {
    record(.video(state))
  }
  func videoOutput(_ output: TiCloudStorageVideoOutput, didFailWithCode code: Int32) {
    record(.videoFailure(code))
  }
  func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeRenderSize size: CGSize) {
    record(.videoSize(Int(size.width), Int(size.height)))
  }
  func audioOutput(_ output: TiCloudStorageAudioOutput, didChangeState state: TiCloudStorageAudioOutputState) {
    record(.audio(state))
  }
  func audioOutput(_ output: TiCloudStorageAudioOutput, didFailWithCode code: Int32) {
    record(.audioFailure(code))
  }

  var entries: [Entry] { storage.withLock { $0.map(\.entry) } }
  /// Whether each callback ran on the main queue.
  var onMainThread: [Bool] { storage.withLock { $0.map(\.onMain) } }
  var times: [Int64] { entries.compactMap { if case .time(let ms) = $0 { ms } else { nil } } }
  var videoStates: [TiCloudStorageVideoOutputState] {
    entries.compactMap { if case .video(let state) = $0 { state } else { nil } }
  }
  /// The render sizes the Video Output's delegate heard of, in order.
  var videoSizes: [[Int]] {
    entries.compactMap { if case .videoSize(let width, let height) = $0 { [width, height] } else { nil } }
  }
  var audioStates: [TiCloudStorageAudioOutputState] {
    entries.compactMap { if case .audio(let state) = $0 { state } else { nil } }
  }
  /// Entries from the Outputs' delegates.
  var outputEntries: [Entry] {
    storage.withLock { $0 }.filter {
      switch $0.entry {
      case .video, .videoFailure, .videoSize, .audio, .audioFailure: true
      default: false
      }
    }.map(\.entry)
  }
  /// Whether every delegate call ran on the main queue.
  var delegatesOnMain: Bool {
    storage.withLock { $0 }.allSatisfy {
      switch $0.entry {
      case .video, .videoFailure, .videoSize, .audio, .audioFailure: $0.onMain
      default: true
      }
    }
  }
}

/// 6 s with two video channels — 0 at 320×240 with AAC on channel 1, and 2 at 160×120 — in the same
/// objects (T9: a task records one video channel).
func twoVideoChannelLibrary() throws -> TemporaryDirectory {
  let directory = try TemporaryDirectory("tipipe-two-channels")
  try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: directory.url)
  try addSecondVideoChannel(to: directory.url, options: smallOptions(seconds: 6))
  return directory
}

/// A device, a Replay, a Video Output (frame capture view) and an Audio Output, bound and watched.
@MainActor
final class ReplayRig {
  let storage = TiCloudStorage(token: "device-token")
  let replay: TiCloudStorageReplay
  let video = TiCloudStorageVideoOutput()
  let audio: TiCloudStorageAudioOutput
  let device = CaptureAudioDevice()
  let view = FrameCaptureRenderer()
  let log = SDKLog()

  init(callbackThread: TiCloudStorageCallbackThread = .main, bindAudio: Bool = true, bindVideo: Bool = true) {
    replay = storage.createReplay(callbackThread: callbackThread)
    audio = TiCloudStorageAudioOutput(device: device)
    video.delegate = log
    audio.delegate = log
    log.watch(replay)
    if bindVideo {
      _ = video.attachView(view)
      _ = video.attach(replay: replay, channelId: 0)
    }
    if bindAudio { _ = audio.attach(replay: replay, channelId: 1) }
  }

  /// Plays `[from, to)` ms after the recording's start.
  func play(_ from: Int64 = 0, _ to: Int64 = 9000, initial: Int64? = nil) -> Int32 {
    replay.play(
      startTimeMs: recordingStart + from, endTimeMs: recordingStart + to,
      initialTimeMs: initial.map { recordingStart + $0 })
  }

  /// The documented teardown (L38): every step's code.
  func tearDown() -> [Int32] {
    [
      replay.stop(), video.detach(), audio.detach(), video.detachView(), video.dispose(), audio.dispose(),
      replay.dispose(), storage.dispose(),
    ]
  }
}

/// The shared library, with listings that fail on demand (as the cloud does for an expired token).
final class ScriptedService: RecordingService {
  private let library: LocalLibraryService
  private let executor: ManualExecutor
  private let failure = Locked<MediaError.Kind?>(nil)
  /// The tokens the listings were asked with.
  let tokens = Locked<[String]>([])

  init(_ library: LocalLibraryService, executor: ManualExecutor) {
    self.library = library
    self.executor = executor
  }

  /// Every listing from now on fails with an error of `kind` (nil: none does), as the engine reports it:
  /// the SDK gives it its seed code.
  func failListings(with kind: MediaError.Kind?) { failure.withLock { $0 = kind } }

  /// Listings left before every later one fails (a token that runs out during an operation).
  private let listingBudget = Locked<(left: Int, kind: MediaError.Kind)?>(nil)
  /// Objects starting at or after this time (ms) have their URL refused, as an expired presigned URL.
  private let refusedFrom = Locked<Int64?>(nil)

  /// The next `count` listings succeed; every later one fails with an error of `kind`.
  func failListings(after count: Int, with kind: MediaError.Kind) { listingBudget.withLock { $0 = (count, kind) } }

  /// Fetches of objects starting at or after `startMs` answer `urlRefused` (the operation lists again).
  func refuseURLs(from startMs: Int64) { refusedFrom.withLock { $0 = startMs } }

  var endpoint: String { library.endpoint }

  func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest {
    tokens.withLock { $0.append(token) }
    let exhausted = listingBudget.withLock { budget -> MediaError.Kind? in
      guard let current = budget else { return nil }
      budget = (current.left - 1, current.kind)
      return current.left > 0 ? nil : current.kind
    }
    if let kind = exhausted ?? failure.withLock({ $0 }) {
      executor.execute { completion(.failure(MediaError(kind, "scripted failure"))) }
      return ServiceRequest {}
    }
    return library.listSegments(in: range, token: token, completion: completion)
  }

  func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    if let from = refusedFrom.withLock({ $0 }), segment.startMs >= from {
      executor.execute { completion(.urlRefused(MediaError(.accessDenied, "the URL's signature expired"))) }
      return ServiceRequest {}
    }
    return library.fetchObject(segment, completion: completion)
  }
}
