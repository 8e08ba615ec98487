import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// What a replay under test reported, in order.
final class ReplayLog: Sendable {
  enum Entry: Equatable {
    case time(Int64)
    case gap(RecordingGap)
    case completed
    case error(TiErrorCode)
  }

  private let storage = Locked<[Entry]>([])
  func append(_ entry: Entry) { storage.withLock { $0.append(entry) } }
  var entries: [Entry] { storage.withLock { $0 } }
  var times: [Int64] { entries.compactMap { if case .time(let ms) = $0 { ms } else { nil } } }
  var gaps: [RecordingGap] { entries.compactMap { if case .gap(let gap) = $0 { gap } else { nil } } }
  var completions: Int { entries.count { $0 == .completed } }
  var errors: [TiErrorCode] { entries.compactMap { if case .error(let code) = $0 { code } else { nil } } }
}

/// A renderer that notes each frame's media time and the clock instant it was presented at.
final class TimedRenderer: VideoRenderer, @unchecked Sendable {
  private let clock: any PipelineClock
  private let lock = NSLock()
  private var presented: [(media: Int64, at: Int64)] = []

  init(clock: any PipelineClock) { self.clock = clock }

  func render(_ frame: DecodedFrame) {
    let now = clock.now.microseconds
    lock.withLock { presented.append((frame.time.microseconds, now)) }
  }

  /// (media µs, clock µs) of each presented frame, in order.
  var frames: [(media: Int64, at: Int64)] { lock.withLock { presented } }
}

/// An audio device that notes each frame's media time and the clock instant it was played at.
final class TimedAudioDevice: AudioDevice, @unchecked Sendable {
  private let clock: any PipelineClock
  private let lock = NSLock()
  private var frames: [(time: Int64, samples: Int, volume: Int, at: Int64)] = []

  init(clock: any PipelineClock) { self.clock = clock }

  func play(_ frame: DecodedFrame, volume: Int) {
    let now = clock.now.microseconds
    lock.withLock { frames.append((frame.time.microseconds, frame.frame.sampleCount, volume, now)) }
  }

  /// Media time (µs), samples and volume of each frame played.
  var played: [(time: Int64, samples: Int, volume: Int)] {
    lock.withLock { frames.map { ($0.time, $0.samples, $0.volume) } }
  }
  /// (media µs, clock µs) of each frame played, in order.
  var instants: [(media: Int64, at: Int64)] { lock.withLock { frames.map { ($0.time, $0.at) } } }
}

/// A replay of a synthetic library on the test's thread: a manual executor, a virtual clock that
/// moves only when the test cranks it, the library read on the same executor.
final class ReplayHarness {
  let directory: TemporaryDirectory
  let executor = ManualExecutor()
  let clock = VirtualClock()
  let replay: Replay
  let log = ReplayLog()
  let renderer: TimedRenderer
  let audio: TimedAudioDevice
  /// The library the replay reads, counting the objects fetched.
  let service: CountingService
  /// What the outputs heard ("video presenting", "audio completed", "video failed 6130"), with the
  /// clock instant (µs).
  let outputEvents = Locked<[(event: String, at: Int64)]>([])

  /// `seconds` of the small test recording (25 fps, 2 s GOPs, 3 s objects, AAC; video on channel 0,
  /// audio on 1), or a library of other `options`, with `gaps`, the video output bound to
  /// `videoChannel`; `damage` may change the library before the replay reads it.
  init(
    seconds: Int = 9, gaps: [(offset: Int, length: Int)] = [], audio: Bool = false, videoChannel: UInt8 = 0,
    options: LibrarySynthesizer.Options? = nil, damage: (URL) throws -> Void = { _ in }
  ) throws {
    directory = try TemporaryDirectory("tipipe-replay")
    var options = options ?? smallOptions(seconds: seconds)
    if !gaps.isEmpty { options.gaps = gaps }
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try damage(directory.url)
    self.audio = TimedAudioDevice(clock: clock)
    let environment = ReplayEnvironment(
      executor: executor, clock: clock, workers: executor, deliver: { $0() })
    service = CountingService(LocalLibraryService(directory: directory.url, workers: executor))
    replay = Replay(service: service, environment: environment)
    renderer = TimedRenderer(clock: clock)
    let (outputEvents, clock) = (self.outputEvents, self.clock)
    let note = { @Sendable (kind: String, event: Replay.OutputEvent) in
      let name =
        switch event {
        case .presenting: "presenting"
        case .completed: "completed"
        case .failed(let error): "failed \(error.code.rawValue)"
        }
      outputEvents.withLock { $0.append(("\(kind) \(name)", clock.now.microseconds)) }
    }
    replay.bindVideo(channel: videoChannel, renderer: renderer) { note("video", $0) }
    if audio { replay.bindAudio(channel: 1, device: self.audio) { note("audio", $0) } }
    let log = self.log
    replay.onTimeChanged = { log.append(.time($0)) }
    replay.onRecordingGap = { log.append(.gap($0)) }
    replay.onCompleted = { log.append(.completed) }
    replay.onError = { log.append(.error($0.code)) }
  }

  /// Plays `[from, to)` ms after the recording's start.
  @discardableResult
  func play(_ from: Int64, _ to: Int64, initial: Int64? = nil) -> TiErrorCode {
    replay.play(
      startTimeMs: recordingStart + from, endTimeMs: recordingStart + to,
      initialTimeMs: initial.map { recordingStart + $0 },
      token: "test")
  }

  /// Runs every job, moving the clock from timer to timer, until nothing is left or `limit` of clock
  /// time has passed.
  func runToEnd(limit: Duration = .seconds(3600)) {
    let deadline = clock.now + limit
    while true {
      executor.runUntilIdle()
      guard let next = clock.nextDeadline, next <= deadline else { break }
      clock.crank()
    }
  }

  /// Runs jobs and timers up to `duration` of clock time from now.
  func run(for duration: Duration) {
    let target = clock.now + duration
    while true {
      executor.runUntilIdle()
      guard let next = clock.nextDeadline, next <= target else { break }
      clock.crank()
    }
    clock.advance(to: target)
    executor.runUntilIdle()
  }
}

/// Media time `ms` after the recording's start, in µs.
func media(_ ms: Int64) -> Int64 { (recordingStart + ms) * 1000 }

/// A service that forwards to another and records which objects were fetched, in order.
final class CountingService: RecordingService {
  private let wrapped: any RecordingService
  private let fetched = Locked<[Int64]>([])
  /// The object (ms after the recording's start) whose next fetch is held, and its completion once held.
  private let held = Locked<(start: Int64?, completion: (@Sendable (ObjectFetch) -> Void)?)>((nil, nil))

  /// Holds the next fetch of the object starting at `start` (ms after the recording's start) until
  /// ``fail(with:)``.
  func hold(_ start: Int64) { held.withLock { $0 = (start, nil) } }

  /// Answers the held fetch with `error`; false when no fetch is held.
  func fail(with error: TiError) -> Bool {
    guard
      let completion = held.withLock({ held in
        defer { held = (nil, nil) }; return held.completion
      })
    else {
      return false
    }
    completion(.failed(error))
    return true
  }
  init(_ wrapped: any RecordingService) { self.wrapped = wrapped }
  var endpoint: String { wrapped.endpoint }
  /// The start (ms after the recording's start) of each object fetched, in order.
  var fetchedStarts: [Int64] { fetched.withLock { $0 } }
  func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, TiError>) -> Void
  ) -> ServiceRequest {
    wrapped.listSegments(in: range, token: token, completion: completion)
  }
  func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    let start = segment.startMs - recordingStart
    fetched.withLock { $0.append(start) }
    let holds = held.withLock { held -> Bool in
      guard held.start == start, held.completion == nil else { return false }
      held.completion = completion
      return true
    }
    if holds { return ServiceRequest {} }
    return wrapped.fetchObject(segment, completion: completion)
  }
}
