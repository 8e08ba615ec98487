import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph
import TiCloudStorage

/// A `Replay` of a synthetic library on the test's own thread: a `ManualExecutor` runs every job (the
/// graph's nodes, the library's reads and the callbacks, each a job of its own), a `VirtualClock` moves
/// only when the test runs it, and timed outputs note what was presented and when.
///
/// ```swift
/// let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 3)], audio: true)
/// harness.play(0, 9000)
/// harness.runToEnd()
/// #expect(harness.log.gaps.count == 1)
/// #expect(harness.renderer.frames.count == 150)
/// ```
///
/// Not thread-safe: one test thread creates it, plays, runs and reads it. The library lives in a
/// temporary directory removed with the harness.
package final class ReplayHarness {
  /// The library's directory.
  package let library: URL
  /// Runs every job; nothing runs until the test runs it (``run(for:)``, ``runToEnd(limit:)``).
  package let executor = ManualExecutor()
  /// The replay's clock; it moves only in ``run(for:)`` and ``runToEnd(limit:)``.
  package let clock = VirtualClock()
  /// The replay under test.
  package let replay: Replay
  /// Its callbacks, in order.
  package let log = ReplayLog()
  /// The video output's frames.
  package let renderer: TimedRenderer
  /// The video output's binding (the one presenting to ``renderer``).
  package let videoOutput: Replay.OutputID
  /// The audio output's frames (bound only when asked for at creation).
  package let audio: TimedAudioDevice
  /// The audio output's binding, when bound at creation.
  package let audioOutput: Replay.OutputID?
  /// The library the replay reads, noting the objects fetched.
  package let service: CountingService
  /// The first instant (UTC ms) of the library.
  package let recordingStart: Int64
  private let events = Locked<[(event: String, at: Int64)]>([])

  /// Writes `options`' library (``ReplayFixtures/options(seconds:)`` by default) with `gaps` (offset and
  /// length in seconds), lets `damage` change it before anything reads it, and binds the video output
  /// to `videoChannel` and, with `audio`, the audio output to channel 1. With `slewed`, the replay's clock
  /// is a `SlewedClock` over ``clock`` (it follows a speaker that says how long it holds its sound). The
  /// service stands for one of the network (the replay keeps what it fetched) unless `readsLocalFiles`.
  package init(
    seconds: Int = 9, gaps: [(offset: Int, length: Int)] = [], audio: Bool = false, videoChannel: UInt8 = 0,
    options: LibrarySynthesizer.Options? = nil, slewed: Bool = false, readsLocalFiles: Bool = false,
    damage: (URL) throws -> Void = { _ in }
  ) throws {
    var options = options ?? ReplayFixtures.options(seconds: seconds)
    if !gaps.isEmpty { options.gaps = gaps }
    library = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-replay-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
    do {
      try LibrarySynthesizer(options: options).write(to: library)
      try damage(library)
    } catch {
      try? FileManager.default.removeItem(at: library)
      throw error
    }
    recordingStart = options.startMilliseconds
    self.audio = TimedAudioDevice(clock: clock)
    service = CountingService(
      LocalLibraryService(directory: library, workers: executor), origin: options.startMilliseconds,
      readsLocalFiles: readsLocalFiles)
    replay = Replay(
      service: service,
      environment: slewed
        ? ReplayEnvironment(
          executor: executor, clock: SlewedClock(base: clock), workers: executor,
          deliver: { [executor] in executor.execute($0) })
        : .manual(executor: executor, clock: clock))
    renderer = TimedRenderer(clock: clock)
    let (events, clock) = (self.events, self.clock)
    let note = { @Sendable (kind: String, event: Replay.OutputEvent) in
      let name =
        switch event {
        case .presenting: "presenting"
        case .completed: "completed"
        case .failed(let error): "failed \(error.code.rawValue)"
        }
      events.withLock { $0.append(("\(kind) \(name)", clock.now.microseconds)) }
    }
    videoOutput = replay.bindVideo(channel: videoChannel, renderer: renderer) { note("video", $0) }
    audioOutput = audio ? replay.bindAudio(channel: 1, device: self.audio) { note("audio", $0) } : nil
    log.observe(replay)
  }

  deinit { try? FileManager.default.removeItem(at: library) }

  /// What the outputs heard ("video presenting", "audio completed", "video failed 6130"), with the clock
  /// instant (µs), in order.
  package var outputEvents: [(event: String, at: Int64)] { events.withLock { $0 } }

  /// Plays `[from, to)` ms after the recording's start, from `initial` ms after it (or `from`).
  @discardableResult
  package func play(_ from: Int64, _ to: Int64, initial: Int64? = nil) -> TiErrorCode {
    replay.play(
      MediaRange(startMilliseconds: recordingStart + from, endMilliseconds: recordingStart + to),
      from: initial.map { MediaTime(milliseconds: recordingStart + $0) }, token: "test")
  }

  /// Media time `ms` after the recording's start, in µs (what ``TimedRenderer/frames`` holds).
  package func media(_ ms: Int64) -> Int64 { (recordingStart + ms) * 1000 }

  /// Runs every job, moving the clock from timer to timer, until nothing is left or `limit` of clock
  /// time has passed.
  package func runToEnd(limit: Duration = .seconds(3600)) {
    executor.runUntilIdle(firingTimersOf: clock, through: clock.now + limit)
  }

  /// Runs jobs and timers up to `duration` of clock time from now, and leaves the clock there.
  package func run(for duration: Duration) {
    let target = clock.now + duration
    executor.runUntilIdle(firingTimersOf: clock, through: target)
    clock.advance(to: target)
    executor.runUntilIdle()
  }
}
