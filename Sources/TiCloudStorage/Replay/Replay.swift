import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// Replay as a graph configuration: plays a device's recordings of a range at one of seven speeds,
/// with pause, seek, gaps reported as they are crossed, and the position as it advances.
///
/// Each play (and each change of outputs or recorders) builds
/// `CloudSegmentSource → SegmentVerifier → SegmentDemuxer → TrackRouter → GapDetector ─┬→ FrameDecoder → Pacer → PresentationSink (video)`
/// `                                                                                   └→ FrameDecoder → Pacer(muted off 1×) → PresentationSink (audio)`
/// over any `RecordingService` (`file://` or `http(s)://`), on the environment's executor and clock.
/// A seek flushes that graph in place (`Pipeline.flush(seekingTo:)`): the source lists and fetches
/// from the target, the demuxer starts at the keyframe at or before it, decoders restart, and the pacers
/// present nothing earlier. The latest seek wins, and what the graph did before it (frames, gaps, its
/// end) is dropped by flush generation. The source reads ahead (16 MB) while the play runs and not
/// while it is paused: a paused play downloads no more than its edges hold. The callbacks of one play follow the seed: `onTimeChanged` at most
/// once per 100 ms of media (and at each seek, after each gap, and at the end), `onRecordingGap` once
/// per gap crossed, between the time events around it, and exactly one of `onCompleted` or `onError`
/// unless the play is stopped or replaced. The graph also carries a `ChannelWatch` and a `RecorderTap`
/// after the detector, a `RawDumpTap` on the demuxer's output, and an `AudioTranscoder` before the
/// recorders when one records audio (`tipipe graph replay` prints it).
///
/// The position and the gaps reported follow the first video output, or the first audio output once it
/// has presented 500 ms of media while the video presented nothing since the play or the seek, or when
/// the video has failed (its channel may
/// carry no media: that output fails with 6130 once 5 s of its kind have played, O40). A hole is
/// reported once, as that output's track's gap (R74); a gap of another track only (audio missing while
/// the video plays) is not a gap of the play (an export reports it, per track). Outputs complete with
/// the play (O8). When no output presents anything (a video-only play of a channel
/// without media, or such a video with audio off 1×, which is muted), every stretch is a gap of what
/// the play presents and is skipped without waiting: the play completes as soon as it is read.
///
/// States: idle (no play), active (running or paused) until stop, a new play, natural completion or
/// an error; seek, pause and resume need an active play. A recording that fails for good is a gap only
/// when media after it plays, else the play ends with its error (R73).
///
/// Callbacks are handed to the environment's `deliver` — the main queue, the SDK's background queue, or
/// what a test chooses — and never run inside one of the Replay's own methods (except
/// `onSeekSuperseded`, which runs in the `seek` that superseded an earlier one); those of a stopped or
/// replaced play are dropped. Every method may be called from any thread.
///
/// This is the engine of the seed's `TiCloudStorageReplay`; the SDK object adds the instance, the
/// Outputs and the lifecycle rules on top of it.
public final class Replay: @unchecked Sendable {
  /// A play's failure (token, network, listing, unreadable recording).
  public typealias ErrorHandler = @Sendable (TiError) -> Void

  /// Called with the position, in UTC ms.
  public var onTimeChanged: (@Sendable (Int64) -> Void)? {
    get { state.withLock { $0.onTimeChanged } }
    set { state.withLock { $0.onTimeChanged = newValue } }
  }
  /// Called when a play fails.
  public var onError: ErrorHandler? {
    get { state.withLock { $0.onError } }
    set { state.withLock { $0.onError = newValue } }
  }
  /// Called when a play's range is exhausted.
  public var onCompleted: (@Sendable () -> Void)? {
    get { state.withLock { $0.onCompleted } }
    set { state.withLock { $0.onCompleted = newValue } }
  }
  /// Called for each gap the position crosses.
  public var onRecordingGap: (@Sendable (RecordingGap) -> Void)? {
    get { state.withLock { $0.onRecordingGap } }
    set { state.withLock { $0.onRecordingGap = newValue } }
  }

  /// Called, in the `seek` call that superseded it, with the target of a seek that never took effect
  /// and the new target (R32: the last seek wins; the one it replaced is reported, not silently lost).
  public var onSeekSuperseded: (@Sendable (_ superseded: Int64, _ by: Int64) -> Void)? {
    get { state.withLock { $0.onSeekSuperseded } }
    set { state.withLock { $0.onSeekSuperseded = newValue } }
  }

  private let service: any RecordingService
  private let environment: ReplayEnvironment
  private let state = Locked(State())

  /// Identifies one output bound to the replay.
  public struct OutputID: Hashable, Sendable {
    let value: Int
  }

  /// What happens to one bound output, on the graph's executor.
  public enum OutputEvent: Sendable {
    /// The branch presented its first frame since the play, the seek or the binding.
    case presenting
    /// The play's range was exhausted and the branch has drained.
    case completed
    /// The branch's own decoding or presentation failed; the play and the other outputs go on.
    case failed(TiError)
  }

  /// Where an output's branch presents: a renderer for video, a device for audio.
  public enum OutputTarget {
    /// Video frames go to the renderer.
    case video(any VideoRenderer)
    /// Audio frames go to the device.
    case audio(any AudioDevice)
  }

  struct Binding {
    let id: OutputID
    let channel: UInt8
    let target: OutputTarget
    var volume = 100
    let events: (@Sendable (OutputEvent) -> Void)?
    /// Bound while a play was running: its branch starts at the next keyframe from here (ms).
    var joinsAt: Int64?

    var track: TrackID {
      switch target {
      case .video: TrackID(.video, channel: channel)
      case .audio: TrackID(.audio, channel: channel)
      }
    }
    var isVideo: Bool {
      if case .video = target { true } else { false }
    }
  }

  struct Play {
    var start: Int64
    var end: Int64
    var token: String
  }

  struct State {
    /// Those awaiting a play's end (the async ``play(startTimeMs:endTimeMs:initialTimeMs:token:)``), by
    /// play number.
    var waiters: [Int: Waiter] = [:]
    var onTimeChanged: (@Sendable (Int64) -> Void)?
    var onError: ErrorHandler?
    var onCompleted: (@Sendable () -> Void)?
    var onRecordingGap: (@Sendable (RecordingGap) -> Void)?
    var onSeekSuperseded: (@Sendable (Int64, Int64) -> Void)?
    var bindings: [Binding] = []
    var nextBinding = 0
    /// The recording tasks of the play, and what to call when the play ends for them.
    var recorders: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)] = []
    /// Raw dumps capturing what it reads, with the timers that end them.
    var rawDumps: [(dump: RawDumpWriter, timer: ClockTimer)] = []
    var speed = ReplaySpeed.x1
    var play: Play?
    /// True while the play is running or paused (not stopped, completed or failed).
    var active = false
    var paused = false
    /// Where the play or the latest seek started (ms): a restart before any frame starts there again.
    var target: Int64 = 0
    var position: Int64?
    var lastReported: Int64?
    var reportNext = true
    /// Bumped by every play, seek, stop and binding change: events of an older graph are dropped.
    var generation = 0
    /// Bumped by every play and stop: events of an older play not yet delivered are dropped (R70).
    var playNumber = 0
    var graph: Graph?
    var lastFrame: DecodedFrame?
    /// The position was reached after the play's or the latest seek's target (else a restart starts at
    /// the target).
    var positionFollowsTarget = false
    /// A seek was made whose target has not been presented yet (a later seek supersedes it).
    var seekPending = false
    /// Outputs whose channel carried nothing while others of its kind did: failed with 6130 once the
    /// position reaches the time it was noticed at (O40).
    var mismatches: [OutputID: MediaTime] = [:]
    /// Outputs that presented a frame since the play, the seek or their binding.
    var presentingOutputs: Set<OutputID> = []
    /// Outputs that failed in this play: nothing more is presented to them (O9), until a new play.
    var failedOutputs: Set<OutputID> = []
    /// Outputs whose branch has presented all its media: completed with the play (O8), not before, as
    /// the play may still end with an error (R73).
    var drainedOutputs: Set<OutputID> = []
    /// Gaps crossed since a recording failed for good (R73): reported once media after them plays; if
    /// none does, the play ends with the failure's code instead.
    var heldGaps: [RecordingGap] = []
    /// Gaps a position candidate crossed while another one was the driver and it had presented nothing:
    /// reported if it takes over (the audio of a play whose video presents nothing).
    var earlyGaps: [OutputID: [RecordingGap]] = [:]
    /// The ranges reported since the play or the seek (a take-over reports none twice).
    var reportedRanges: [MediaRange] = []
    /// The first and the latest frame each output presented since the play or the seek.
    var presentedSpan: [OutputID: (first: MediaTime, latest: MediaTime)] = [:]
    /// The output whose frames moved the position last in this graph generation (nil after a play, a
    /// seek or a restart): another one takes over without moving the position back.
    var positionDriver: OutputID?
    var videoFrames = 0
    var audioFrames = 0
    var droppedBefore = 0
  }

  /// One graph: what a play, a seek or a binding change started.
  final class Graph: @unchecked Sendable {
    let pipeline: Pipeline
    let source: CloudSegmentSource
    /// An output presents (else recorders alone take what is read).
    let presents: Bool
    let pacers: [Pacer]
    /// The tracks its router lets through.
    let tracks: Set<TrackID>
    /// The replay's generation when it was built: each seek flushes it (one pipeline generation more)
    /// and bumps the replay's, so its events of pipeline generation g belong to replay generation
    /// `base + g`.
    let base: Int
    init(
      pipeline: Pipeline, source: CloudSegmentSource, pacers: [Pacer], videoPacers: [Pacer], tracks: Set<TrackID>,
      base: Int
    ) {
      self.pipeline = pipeline
      self.source = source
      presents = !pacers.isEmpty
      self.pacers = pacers
      self.videoPacers = videoPacers
      self.tracks = tracks
      self.base = base
    }
    /// The pacers of its video outputs.
    let videoPacers: [Pacer]
    /// Video frames dropped as late, by every video output's pacer.
    var dropped: Int { videoPacers.reduce(0) { $0 + $1.statistics.dropped.load(ordering: .relaxed) } }
  }

  /// A replay of the recordings `service` holds, running in `environment`.
  public init(service: any RecordingService, environment: ReplayEnvironment = .realtime()) {
    self.service = service
    self.environment = environment
  }

  deinit {
    state.withLock { $0.graph }?.pipeline.stop()
  }

  // MARK: Outputs

  /// Presents the video of `channel` to `renderer`; `events` hears of the branch's first frame, its end
  /// and its own failure, on the environment's executor (not through `deliver`). Bound while a play
  /// runs, the output starts at the next keyframe.
  @discardableResult
  public func bindVideo(
    channel: UInt8, renderer: any VideoRenderer, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    bind(channel: channel, target: .video(renderer), volume: 100, events: events)
  }

  /// Plays the audio of `channel` on `device` at `volume` (0...100); see ``bindVideo(channel:renderer:events:)``.
  @discardableResult
  public func bindAudio(
    channel: UInt8, device: any AudioDevice, volume: Int = 100, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    bind(channel: channel, target: .audio(device), volume: min(max(volume, 0), 100), events: events)
  }

  /// Binds an output of `channel` presenting to `target`; see ``bindVideo(channel:renderer:events:)``.
  @discardableResult
  public func bind(
    channel: UInt8, target: OutputTarget, volume: Int = 100, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    let (id, restart) = state.withLock { state -> (OutputID, Bool) in
      let id = OutputID(value: state.nextBinding)
      state.nextBinding += 1
      let joinsAt = state.active ? (state.position ?? state.target) : nil
      state.bindings.append(
        Binding(id: id, channel: channel, target: target, volume: volume, events: events, joinsAt: joinsAt))
      return (id, state.active)
    }
    if restart { self.restart() }
    return id
  }

  /// Removes an output. The play goes on for the others; when none is left the replay stops reading
  /// (no completion, the position frozen) until an output is bound again.
  public func unbind(_ id: OutputID) {
    let restart = state.withLock { state -> Bool in
      guard let index = state.bindings.firstIndex(where: { $0.id == id }) else { return false }
      state.bindings.remove(at: index)
      state.presentingOutputs.remove(id)
      state.failedOutputs.remove(id)
      state.drainedOutputs.remove(id)
      return state.active
    }
    if restart { self.restart() }
  }

  /// Sets an audio output's volume, 0...100; `invalidArgument` outside (nothing changes).
  @discardableResult
  public func setVolume(_ volume: Int, of id: OutputID) -> TiErrorCode {
    guard (0...100).contains(volume) else { return .invalidArgument }
    state.withLock { state in
      if let index = state.bindings.firstIndex(where: { $0.id == id }) { state.bindings[index].volume = volume }
    }
    return .ok
  }

  // MARK: Recording

  /// Hands what the active play plays from now on to `recorder` (which starts at its next keyframe),
  /// even while no output is bound; the graph is rebuilt from the position, so what was read ahead is
  /// read again for it. `onEnd` is called once when the play ends (with true for a natural completion),
  /// the recorder falls behind (`ReplayRecorder.whenOverrun(_:)`) or ``removeRecorder(_:)`` is called,
  /// directly rather than through `deliver`: on the environment's executor when the graph completes or
  /// fails, on a global queue when the recorder fell behind, else on the thread of the call that ended
  /// the play. `notStarted` without an active play.
  @discardableResult
  public func addRecorder(_ recorder: ReplayRecorder, onEnd: @escaping @Sendable (Bool) -> Void) -> TiErrorCode {
    let added = state.withLock { state -> Bool in
      guard state.active else { return false }
      state.recorders.append((recorder, onEnd))
      return true
    }
    guard added else { return .notStarted }
    // A writer that cannot keep up ends its task at once (T13), not when the play ends.
    recorder.whenOverrun { [weak self, weak recorder] in
      if let self, let recorder { removeRecorder(recorder) }
    }
    restart()
    return .ok
  }

  /// Where the active play is (ms), or where it starts when nothing was presented yet.
  public var recordingStart: MediaTime? {
    state.withLock { state in
      guard state.active else { return nil }
      return MediaTime(milliseconds: state.positionFollowsTarget ? state.position ?? state.target : state.target)
    }
  }

  /// Stops handing media to `recorder` (its task stopped) and calls its `onEnd`; with no output and no
  /// other recorder left the replay stops reading.
  public func removeRecorder(_ recorder: ReplayRecorder) {
    let (ended, idle) = state.withLock { state -> ((@Sendable (Bool) -> Void)?, Bool) in
      guard let index = state.recorders.firstIndex(where: { $0.recorder === recorder }) else { return (nil, false) }
      let ended = state.recorders.remove(at: index).onEnd
      return (ended, state.active && state.bindings.isEmpty && state.recorders.isEmpty)
    }
    if idle { restart() }
    ended?(false)
  }

  // MARK: Raw dumps

  /// Hands every packet of `dump`'s tracks that the replay reads from now on — across plays, seeks and
  /// binding changes — to `dump`, which finishes by itself after `maximumDuration` on the replay's
  /// clock (`durationLimit`). Nothing is captured while nothing is read.
  public func attachRawDump(_ dump: RawDumpWriter, maximumDuration: Duration) {
    let clock = environment.clock
    let timer = clock.schedule(at: clock.now + maximumDuration, on: environment.executor) { [weak dump] in
      dump?.finish(.durationLimit) { _ in }
    }
    state.withLock { $0.rawDumps.append((dump, timer)) }
    dump.whenFinished { [weak self, weak dump] _ in
      guard let self, let dump else { return }
      detachRawDump(dump)
    }
  }

  /// Stops handing media to `dump`.
  func detachRawDump(_ dump: RawDumpWriter) {
    let timer = state.withLock { state -> ClockTimer? in
      guard let index = state.rawDumps.firstIndex(where: { $0.dump === dump }) else { return nil }
      return state.rawDumps.remove(at: index).timer
    }
    timer?.cancel()
  }

  /// The play ended (`naturally` at its range's end): every recorder's `onEnd` (T7, T17).
  private func endRecorders(
    _ ended: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)], naturally: Bool = false
  ) {
    for entry in ended { entry.onEnd(naturally) }
  }

  // MARK: Playing

  /// The current speed (kept across plays).
  public var speed: ReplaySpeed { state.withLock { $0.speed } }

  /// The position in UTC ms; nil before the play has one (and after `stop`).
  public var currentTimeMs: Int64? { state.withLock { $0.position } }

  /// Frames presented (video, audio) and video frames dropped as late, over every play so far.
  public var statistics: (videoFrames: Int, audioFrames: Int, droppedFrames: Int) {
    state.withLock { ($0.videoFrames, $0.audioFrames, $0.droppedBefore + ($0.graph?.dropped ?? 0)) }
  }

  /// The last video frame presented (for snapshots): kept after pause, stop and completion.
  public var lastPresentedFrame: DecodedFrame? { state.withLock { $0.lastFrame } }

  /// The graph of the active play (nil without one), for its shape and statistics
  /// (`Pipeline.statistics()`, read while it is idle). A seek flushes it in place; a change of outputs
  /// or recorders replaces it.
  public var activeGraph: Pipeline? { state.withLock { $0.active ? $0.graph?.pipeline : nil } }

  /// Plays `[startTimeMs, endTimeMs)` from `initialTimeMs` (or the start) with `token`.
  ///
  /// `invalidArgument` for an empty range or an initial time outside it, `notBound` without any output;
  /// either way the current play goes on untouched. Accepting a play stops the previous one without its
  /// callbacks; the speed, bindings and volumes are kept, a pause is not.
  @discardableResult
  public func play(startTimeMs: Int64, endTimeMs: Int64, initialTimeMs: Int64? = nil, token: String) -> TiErrorCode {
    begin(startTimeMs: startTimeMs, endTimeMs: endTimeMs, initialTimeMs: initialTimeMs, token: token, waiter: nil)
  }

  /// Plays `[startTimeMs, endTimeMs)` as ``play(startTimeMs:endTimeMs:initialTimeMs:token:)`` does and
  /// returns when the play has ended: ``Ending/completed`` at the end of the range (after `onCompleted`
  /// was delivered), ``Ending/stopped`` when ``stop()`` or another play ended it first. Its failure
  /// (`onError`'s error) and a refused play (`invalidArgument`, `notBound`) are thrown. Cancelling the
  /// awaiting task stops the play. The callbacks are delivered as usual meanwhile.
  public func play(startTimeMs: Int64, endTimeMs: Int64, initialTimeMs: Int64? = nil, token: String) async throws
    -> Ending
  {
    let stream = AsyncStream<Result<Ending, TiError>>.makeStream(bufferingPolicy: .bufferingOldest(1))
    let playNumber = Locked<Int?>(nil)
    let code = begin(
      startTimeMs: startTimeMs, endTimeMs: endTimeMs, initialTimeMs: initialTimeMs, token: token,
      waiter: Waiter(
        started: { number in playNumber.withLock { $0 = number } },
        end: { result in
          stream.continuation.yield(result)
          stream.continuation.finish()
        }))
    guard code == .ok else { throw TiError(code, "the play was refused") }
    let outcome = await withTaskCancellationHandler {
      var iterator = stream.stream.makeAsyncIterator()
      return await iterator.next()
    } onCancel: { [weak self] in
      guard let self, let number = playNumber.withLock({ $0 }) else { return }
      if state.withLock({ $0.playNumber == number }) { stop() }
    }
    guard let outcome else { return .stopped }
    return try outcome.get()
  }

  /// How an awaited play ended.
  public enum Ending: Sendable, Equatable {
    /// The range was played to its end (`onCompleted`).
    case completed
    /// ``stop()``, another play, or the awaiting task's cancellation ended it first.
    case stopped
  }

  /// One awaiting an async play's end.
  struct Waiter {
    /// Told the play's number, under the state's lock, when the play is accepted.
    let started: @Sendable (Int) -> Void
    /// Told the ending, once.
    let end: @Sendable (Result<Ending, TiError>) -> Void
  }

  /// Hands `waiters` (of plays a stop or a new play ended) their ending `stopped`, through `deliver`,
  /// after anything already delivered.
  private func releaseWaiters(_ waiters: [Waiter]) {
    guard !waiters.isEmpty else { return }
    environment.deliver { for waiter in waiters { waiter.end(.success(.stopped)) } }
  }

  private func begin(
    startTimeMs: Int64, endTimeMs: Int64, initialTimeMs: Int64?, token: String, waiter: Waiter?
  ) -> TiErrorCode {
    guard MediaTime.validMilliseconds.contains(startTimeMs), MediaTime.validMilliseconds.contains(endTimeMs),
      startTimeMs < endTimeMs
    else { return .invalidArgument }
    if let initial = initialTimeMs, !(startTimeMs..<endTimeMs).contains(initial) { return .invalidArgument }
    var ended: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)] = []
    var released: [Waiter] = []
    let old = state.withLock { state -> Graph?? in
      guard !state.bindings.isEmpty else { return nil }
      ended = state.recorders
      state.recorders = []
      state.generation += 1
      state.playNumber += 1
      released = Array(state.waiters.values)
      state.waiters = [:]
      if let waiter {
        state.waiters[state.playNumber] = waiter
        waiter.started(state.playNumber)
      }
      state.heldGaps = []
      state.earlyGaps = [:]
      state.reportedRanges = []
      state.positionDriver = nil
      state.seekPending = false
      state.play = Play(start: startTimeMs, end: endTimeMs, token: token)
      state.active = true
      state.paused = false
      state.target = initialTimeMs ?? startTimeMs
      state.positionFollowsTarget = false
      state.mismatches = [:]
      state.position = nil
      state.lastReported = nil
      state.reportNext = true
      state.lastFrame = nil
      state.presentingOutputs = []
      state.presentedSpan = [:]
      state.failedOutputs = []
      state.drainedOutputs = []
      for index in state.bindings.indices { state.bindings[index].joinsAt = nil }
      return .some(retire(&state))
    }
    guard let old else { return .notBound }
    old?.pipeline.stop()
    endRecorders(ended)
    releaseWaiters(released)
    // Both ends are valid times: the span cannot overflow. Over 10 days the play is accepted and ends
    // through onError (R21), as a listing of that span would.
    guard endTimeMs - startTimeMs <= Self.maximumSpanMs else {
      let generation = state.withLock { $0.generation }
      environment.executor.execute { [weak self] in
        self?.failed(TiError(.rangeTooLarge, "a play spans at most 10 days"), generation: generation)
      }
      return .ok
    }
    start(restarting: false)
    return .ok
  }

  /// The longest span a play reads: 10 days, as a listing.
  public static let maximumSpanMs: Int64 = 864_000_000

  /// Halts playback; idempotent. `notStarted` without an active play.
  @discardableResult
  public func pause() -> TiErrorCode { setPaused(true) }

  /// Continues from where playback paused; idempotent. `notStarted` without an active play.
  @discardableResult
  public func resume() -> TiErrorCode { setPaused(false) }

  /// True while a play is running or paused.
  public var isActive: Bool { state.withLock { $0.active } }

  /// True while the active play is paused.
  public var isPaused: Bool { state.withLock { $0.active && $0.paused } }

  private func setPaused(_ paused: Bool) -> TiErrorCode {
    let graph = state.withLock { state -> Graph?? in
      guard state.active else { return nil }
      state.paused = paused
      if let graph = state.graph { graph.source.readsAhead = Self.readsAhead(state) }
      return .some(state.graph)
    }
    guard let graph else { return .notStarted }
    for pacer in graph?.pacers ?? [] { paused ? pacer.pause() : pacer.resume() }
    return .ok
  }

  /// Whether the active graph's source reads ahead of what it emits: not while paused (a paused play
  /// downloads no more than its edges hold, a few objects, as a player on a metered link should, and a
  /// snapshot of a paused play reads little more than it shows); always when nothing presents
  /// (recorders alone). Reading ahead from the first object on matters at high speeds: deferred until the
  /// first frame, the read-ahead competed with 8× decoding on one core and frames came late.
  private static func readsAhead(_ state: State) -> Bool {
    guard let graph = state.graph, graph.presents else { return true }
    return !state.paused
  }

  /// Changes the speed at once, keeping the position (no seek); applies to later plays too.
  @discardableResult
  public func setSpeed(_ speed: ReplaySpeed) -> TiErrorCode {
    let pacers = state.withLock { state -> [Pacer] in
      state.speed = speed
      return state.graph?.pacers ?? []
    }
    for pacer in pacers { pacer.setRate(speed.rate) }
    return .ok
  }

  /// Moves the play to `timeMs`: the first frame presented is the first whose time is not earlier than
  /// it (inside a gap: the first after it). Keeps the speed and the pause (while paused, that first
  /// frame is shown and `currentTimeMs` moves to it). The latest seek wins.
  /// `notStarted` without an active play, `invalidArgument` outside the play's range.
  @discardableResult
  public func seek(toTimeMs timeMs: Int64) -> TiErrorCode {
    var superseded: Int64?
    var flushed = false
    let outcome = state.withLock { state -> Result<Graph?, TiError> in
      guard state.active, let play = state.play else { return .failure(TiError(.notStarted, "no active play")) }
      guard (play.start..<play.end).contains(timeMs) else {
        return .failure(TiError(.invalidArgument, "the target is outside the play's range"))
      }
      state.generation += 1
      state.heldGaps = []
      state.earlyGaps = [:]
      state.reportedRanges = []
      state.positionDriver = nil
      state.reportNext = true
      superseded = state.seekPending ? state.target : nil
      state.seekPending = true
      state.target = timeMs
      state.positionFollowsTarget = false
      state.mismatches = [:]
      state.presentingOutputs = []
      state.presentedSpan = [:]
      state.drainedOutputs = []
      for index in state.bindings.indices { state.bindings[index].joinsAt = nil }
      // The running graph seeks in place (a flushing seek, under the lock so that its pipeline's
      // generations keep in step with ours); only a play without one builds a graph.
      guard let graph = state.graph else { return .success(nil) }
      graph.pipeline.flush(seekingTo: MediaTime(milliseconds: timeMs))
      flushed = true
      return .success(nil)
    }
    switch outcome {
    case .failure(let error): return error.code
    case .success:
      if let superseded, let handler = state.withLock({ $0.onSeekSuperseded }) { handler(superseded, timeMs) }
      // A flushed graph's recorder tap marks the discontinuity in order with the packets.
      guard !flushed else { return .ok }
      for recorder in state.withLock({ $0.recorders.map(\.recorder) }) { recorder.discontinuity() }
      start(restarting: false)
      return .ok
    }
  }

  /// Ends the play without `onCompleted` or `onError`; keeps bindings, speed and the last frame;
  /// idempotent.
  @discardableResult
  public func stop() -> TiErrorCode {
    var ended: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)] = []
    var released: [Waiter] = []
    let old = state.withLock { state -> Graph? in
      state.generation += 1
      state.playNumber += 1
      released = Array(state.waiters.values)
      state.waiters = [:]
      state.heldGaps = []
      state.active = false
      state.paused = false
      state.position = nil
      ended = state.recorders
      state.recorders = []
      return retire(&state)
    }
    old?.pipeline.stop()
    endRecorders(ended)
    releaseWaiters(released)
    return .ok
  }

  /// The bindings changed while a play runs: a new graph from the current position, in which the
  /// outputs already playing go on after their last frame and a new one starts at the next keyframe.
  /// With no output left the play reads nothing until one is bound again.
  private func restart() {
    let (old, recorders) = state.withLock { state -> (Graph?, [ReplayRecorder]) in
      guard state.active else { return (nil, []) }
      state.generation += 1
      state.earlyGaps = [:]
      state.positionDriver = nil
      return (retire(&state), state.recorders.map(\.recorder))
    }
    old?.pipeline.stop()
    for recorder in recorders { recorder.restarted() }
    start(restarting: true)
  }

  /// Takes the current graph out of the state, keeping its drop count.
  private func retire(_ state: inout State) -> Graph? {
    guard let graph = state.graph else { return nil }
    state.droppedBefore += graph.dropped
    state.graph = nil
    return graph
  }

  // MARK: The graph

  /// What one graph is built from.
  struct Plan {
    var range: MediaRange
    var play: Play
    var bindings: [Binding]
    /// The tracks recorders need.
    var recordedTracks: Set<TrackID> = []
    var speed: ReplaySpeed
    var paused: Bool
    var generation: Int
    /// Where outputs that were not joining start presenting (a seek's target, or just after the frame
    /// presented last).
    var presentFrom: MediaTime
    /// The first frame is shown even while paused (a play or a seek), not for a restart.
    var showsFirstFrameWhilePaused: Bool
  }

  /// The graph a play of `[startTimeMs, endTimeMs)` runs with the current bindings, built but not
  /// started (for `tipipe graph replay`: nodes, typed edges and their bounds); `notBound` without any
  /// output.
  public func configuration(startTimeMs: Int64, endTimeMs: Int64) throws -> Pipeline {
    let (bindings, speed) = state.withLock { ($0.bindings, $0.speed) }
    guard !bindings.isEmpty else { throw TiError(.notBound, "a replay needs an output") }
    let range = MediaRange(startMilliseconds: startTimeMs, endMilliseconds: endTimeMs)
    let plan = Plan(
      range: range, play: Play(start: startTimeMs, end: endTimeMs, token: ""), bindings: bindings, speed: speed,
      paused: false, generation: -1, presentFrom: range.start, showsFirstFrameWhilePaused: true)
    return try build(plan).pipeline
  }

  /// Starts the graph of a play or a seek (from the target), or of a binding change (`restarting`:
  /// from the position, the outputs already playing going on after the frame they presented last).
  private func start(restarting: Bool) {
    let plan = state.withLock { state -> Plan? in
      guard state.active, let play = state.play, !state.bindings.isEmpty || !state.recorders.isEmpty else { return nil }
      let position = restarting && state.positionFollowsTarget ? state.position : nil
      let from = position ?? state.target
      var bindings = state.bindings
      for index in bindings.indices {
        if let joinsAt = bindings[index].joinsAt { bindings[index].joinsAt = max(joinsAt, from) }
      }
      return Plan(
        range: MediaRange(startMilliseconds: from, endMilliseconds: play.end), play: play, bindings: bindings,
        recordedTracks: state.recorders.reduce(into: Set<TrackID>()) { $0.formUnion($1.recorder.tracks) },
        speed: state.speed, paused: state.paused, generation: state.generation,
        presentFrom: MediaTime(milliseconds: position.map { $0 + 1 } ?? from),
        showsFirstFrameWhilePaused: position == nil)
    }
    guard let plan else { return }
    var installed: Graph?
    do {
      let graph = try build(plan)
      let current = state.withLock { state -> (paused: Bool, speed: ReplaySpeed)? in
        guard state.generation == plan.generation else { return nil }
        state.graph = graph
        installed = graph
        graph.source.readsAhead = Self.readsAhead(state)
        return (state.paused, state.speed)
      }
      guard let current else { return }
      // A pause or a speed change made while the graph was being built reached no pacer.
      if current.paused != plan.paused || current.speed != plan.speed {
        for pacer in graph.pacers {
          pacer.setRate(current.speed.rate)
          current.paused ? pacer.pause() : pacer.resume()
        }
      }
      try graph.pipeline.start()
    } catch {
      // A seek may have flushed the installed graph since: its failure belongs to the current generation.
      let generation = state.withLock { state in
        installed != nil && state.graph === installed ? state.generation : plan.generation
      }
      failed(TiError(error), generation: generation)
    }
  }

  private func build(_ plan: Plan) throws -> Graph {
    let pipeline = Pipeline(executor: environment.executor, clock: environment.clock, workers: environment.workers)
    let range = plan.range
    let generation = plan.generation
    let primaryVideo = plan.bindings.first { $0.isVideo }
    let primaryAudio = plan.bindings.first { !$0.isVideo }
    // The position follows one branch: the first video output, else the first audio output (see
    // `driver(of:in:)`).
    let candidates = [primaryVideo?.id, primaryAudio?.id].compactMap { $0 }
    // Read-ahead: see `readsAhead(_:)`.
    let source = CloudSegmentSource(
      service: service, range: range, token: plan.play.token, prefetchBytes: 16 << 20,
      readsAhead: candidates.isEmpty || !plan.paused, stallBudget: environment.stallBudget)
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: range.start, endingAt: range.end)
    let tracks = Set(plan.bindings.map(\.track)).union(plan.recordedTracks)
    let router = TrackRouter(tracks: tracks)
    let detector = GapDetector(
      configuration: .init(range: range, videoTrack: primaryVideo?.track, audioTrack: primaryAudio?.track))
    // One object on each edge: the read-ahead is the source's, not the edges'.
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 1, bytes: 16 << 20))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 1, bytes: 16 << 20))
    pipeline.connect(demuxer, to: router, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    pipeline.connect(router, to: detector, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    // An output bound to a channel without media while others of its kind have some fails with 6130.
    let watch = ChannelWatch(tracks: Set(plan.bindings.map(\.track))) { [weak self] track, time, flushes in
      self?.channelMissing(track, noticedAt: time, generation: generation + flushes)
    }
    pipeline.connect(demuxer, to: watch, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    // Recording tasks get what the play reads (their tasks come and go while it runs).
    let tap = RecorderTap(paced: !candidates.isEmpty) { [weak self] in
      self?.state.withLock { $0.recorders.map(\.recorder) } ?? []
    }
    if plan.recordedTracks.contains(where: { $0.kind == .audio }) {
      // An MP4 carries no G.711: recorded audio passes a transcoder to AAC first (T19); AAC passes as is.
      let transcoder = try AudioTranscoder()
      pipeline.connect(detector, to: transcoder, limits: EdgeLimits(items: 256, bytes: 4 << 20))
      pipeline.connect(transcoder, to: tap, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    } else {
      pipeline.connect(detector, to: tap, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    }
    // Raw dumps capture any channel as read, bound or not.
    let dumpTap = RawDumpTap { [weak self] in self?.state.withLock { $0.rawDumps.map(\.dump) } ?? [] }
    pipeline.connect(demuxer, to: dumpTap, limits: EdgeLimits(items: 256, bytes: 4 << 20))

    var pacers: [Pacer] = []
    var videoPacers: [Pacer] = []
    var owners: [ObjectIdentifier: OutputID] = [:]
    // One clock anchor for every output: audio and video of the same time are presented together; a hole
    // is where the detector's tracks all have a gap.
    let timeline = PlaybackTimeline(
      tracks: Set([primaryVideo?.track, primaryAudio?.track].compactMap { $0 }), rate: plan.speed.rate,
      paused: plan.paused)
    for binding in plan.bindings {
      let branch = try connectBranch(
        for: binding, after: detector, plan: plan, timeline: timeline, candidates: candidates, in: pipeline)
      pacers.append(branch.pacer)
      if binding.isVideo { videoPacers.append(branch.pacer) }
      for node in branch.nodes { owners[node] = binding.id }
    }
    pipeline.errorHandler = { [weak self, owners] failure in
      guard let self else { return .stopPipeline }
      // A failure of what a seek has already discarded (a transfer that failed just before it) ends only
      // that node's part of the old generation (resuming would let a source throw again and again before
      // the flush is reached): the flush on its way restarts it, and the graph goes on from the target.
      let failedIn = generation + failure.generation
      guard self.state.withLock({ $0.generation == failedIn }) else { return .endBranch }
      // A branch's own failure (decoding, presentation) fails that output only; anything upstream ends
      // the play.
      if let owner = owners[failure.nodeID] {
        self.outputFailed(owner, TiError(failure.error), generation: failedIn)
        return .endBranch
      }
      self.failed(TiError(failure.error), generation: failedIn)
      return .stopPipeline
    }
    pipeline.onEndOfStream = { [weak self] flushes in
      self?.completed(generation: generation + flushes, candidates: candidates)
    }
    return Graph(
      pipeline: pipeline, source: source, pacers: pacers, videoPacers: videoPacers, tracks: tracks, base: generation)
  }

  /// `[gate →] decoder → pacer → sink` for one output; returns its pacer and its nodes.
  private func connectBranch(
    for binding: Binding, after detector: GapDetector, plan: Plan, timeline: PlaybackTimeline, candidates: [OutputID],
    in pipeline: Pipeline
  ) throws -> (pacer: Pacer, nodes: [ObjectIdentifier]) {
    let generation = plan.generation
    let id = binding.id
    let name = binding.isVideo ? "Video\(binding.channel)" : "Audio\(binding.channel)"
    // One thread: frame threads would hold back a frame each, and a seek's first picture, a step while
    // paused and the frame shown at a gap must come out with their own packet (ExoPlayer and ffplay
    // play with low-delay decoders for the same reason).
    let decoder = try FrameDecoder(name: "\(name)Decoder", track: binding.track, threads: 1)
    let joining = binding.joinsAt.map { MediaTime(milliseconds: $0) }
    let presentFrom = joining ?? plan.presentFrom
    let pacer: Pacer
    let sink: PresentationSink
    switch binding.target {
    case .video(let renderer):
      // A seek while paused shows the target's frame (R35); a play never starts paused. The clock starts
      // with the picture: audio waits for the first frame of the video decoding from the keyframe
      // before the target (video missing holds it back up to the preroll limit). Audio does not preroll:
      // an audio track without media, or with a gap there, would hold the picture back as long. An
      // output that joins a running play holds back nothing.
      pacer = Pacer(
        name: "\(name)Pacer", rate: plan.speed.rate, paused: plan.paused, presentFrom: presentFrom,
        showsFirstFrameWhilePaused: plan.showsFirstFrameWhilePaused || joining != nil, showsFirstFrameAfterSeek: true,
        timeline: timeline, prerolls: joining == nil)
      pacer.decoder = decoder
      sink = PresentationSink(
        name: "\(name)Output",
        onFrame: { [weak self] frame, flushes in
          guard let self,
            self.presented(
              frame, by: id, video: true, candidates: candidates, generation: generation + flushes)
          else { return }
          renderer.render(frame)
        },
        onEvent: { [weak self] event, flushes in
          if case .gap(let gap) = event, gap.concerns(binding.track) {
            self?.crossed(gap, by: id, candidates: candidates, generation: generation + flushes)
          }
        },
        onEnd: { [weak self] flushes in self?.drained(id, generation: generation + flushes) })
    case .audio(let device):
      // With video, audio is muted and not presented off 1×; alone it paces the position.
      let audioOnly = !plan.bindings.contains { $0.isVideo }
      pacer = Pacer(
        name: "\(name)Pacer", rate: plan.speed.rate, paused: plan.paused, presentFrom: presentFrom, muted: !audioOnly,
        timeline: timeline, prerolls: false)
      pacer.decoder = decoder
      sink = PresentationSink(
        name: "\(name)Output",
        onFrame: { [weak self] frame, flushes in
          guard let self,
            self.presented(
              frame, by: id, video: false, candidates: candidates, generation: generation + flushes)
          else { return }
          let volume = self.state.withLock { state -> Int? in
            guard state.speed == .x1 else { return nil }
            return state.bindings.first { $0.id == id }?.volume
          }
          if let volume { device.play(frame, volume: volume) }
        },
        onEvent: { [weak self] event, flushes in
          if case .gap(let gap) = event, gap.concerns(binding.track) {
            self?.crossed(gap, by: id, candidates: candidates, generation: generation + flushes)
          }
        },
        onEnd: { [weak self] flushes in self?.drained(id, generation: generation + flushes) })
    }
    var nodes = [ObjectIdentifier(decoder), ObjectIdentifier(pacer), ObjectIdentifier(sink)]
    if let joining {
      let gate = KeyframeGate(name: "\(name)Gate", track: binding.track, opensAt: joining)
      pipeline.connect(detector, to: gate, limits: EdgeLimits(items: 64, bytes: 4 << 20))
      pipeline.connect(gate, to: decoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
      nodes.append(ObjectIdentifier(gate))
    } else {
      pipeline.connect(detector, to: decoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
    }
    // Few decoded pictures wait for their instant: memory stays small at any speed.
    pipeline.connect(decoder, to: pacer, limits: EdgeLimits(items: binding.isVideo ? 4 : 16))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: binding.isVideo ? 2 : 4))
    return (pacer, nodes)
  }

  // MARK: Events of the graph (on its executor)

  /// Notes a presented frame; false when it belongs to a replaced graph or a removed output.
  private func presented(
    _ frame: DecodedFrame, by id: OutputID, video: Bool, candidates: [OutputID], generation: Int
  ) -> Bool {
    var failedOutputs: [@Sendable (OutputEvent) -> Void] = []
    var heldGaps: (@Sendable () -> Void)?
    defer {
      for events in failedOutputs {
        events(.failed(Self.channelMismatch))
      }
    }
    let outcome = state.withLock {
      state -> (
        accepted: Bool, first: (@Sendable (OutputEvent) -> Void)?, report: (@Sendable (Int64) -> Void, Int64, Int)?
      ) in
      guard state.generation == generation, let index = state.bindings.firstIndex(where: { $0.id == id }),
        !state.failedOutputs.contains(id)
      else {
        return (false, nil, nil)
      }
      var first: (@Sendable (OutputEvent) -> Void)?
      if !state.presentingOutputs.contains(id) {
        state.presentingOutputs.insert(id)
        state.bindings[index].joinsAt = nil
        first = state.bindings[index].events
      }
      state.presentedSpan[id] = (state.presentedSpan[id]?.first ?? frame.time, frame.time)
      let reportsPosition = Self.driver(of: candidates, in: state) == id
      if reportsPosition && (!state.heldGaps.isEmpty || state.earlyGaps[id] != nil) {
        // Media after a failed recording plays: its gaps are gaps after all (R73). So are those the
        // output crossed before it took the position over.
        let reported = state.reportedRanges
        let early = (state.earlyGaps[id] ?? []).filter { gap in !reported.contains { $0.overlaps(gap.range) } }
        let gaps = state.heldGaps + early
        state.reportedRanges = Array((state.reportedRanges + gaps.map(\.range)).suffix(64))
        if let handler = state.onRecordingGap, !gaps.isEmpty {
          let play = state.playNumber
          heldGaps = { [weak self] in self?.deliver(play: play) { for gap in gaps { handler(gap) } } }
          state.reportNext = true
        }
        state.heldGaps = []
        state.earlyGaps = [:]
      }
      if video { state.videoFrames += 1 } else { state.audioFrames += 1 }
      guard reportsPosition else { return (true, first, nil) }
      if video { state.lastFrame = frame }
      for entry in state.recorders { entry.recorder.advance(to: frame.time) }
      if !state.mismatches.isEmpty {
        let reached = state.mismatches.filter { $0.value <= frame.time }
        for id in reached.keys {
          state.mismatches[id] = nil
          state.failedOutputs.insert(id)
        }
        failedOutputs = reached.keys.compactMap { id in state.bindings.first { $0.id == id }?.events }
      }
      let position = frame.time.milliseconds
      // The audio moved the position while the video decoded up to its first frame: the video takes over
      // from where the audio is (its first frames may be a little earlier, presented late).
      if let driver = state.positionDriver, driver != id, let current = state.position, position < current {
        return (true, first, nil)
      }
      state.positionDriver = id
      state.position = position
      state.positionFollowsTarget = true
      state.seekPending = false
      let due = state.reportNext || state.lastReported.map { position - $0 >= 100 } ?? true
      guard due, let handler = state.onTimeChanged else { return (true, first, nil) }
      state.reportNext = false
      state.lastReported = position
      return (true, first, (handler, position, state.playNumber))
    }
    outcome.first?(.presenting)
    heldGaps?()
    if let (handler, position, play) = outcome.report { deliver(play: play) { handler(position) } }
    return outcome.accepted
  }

  /// O40's error.
  private static let channelMismatch = TiError(
    .channelMismatch, "no media of the output's channel for 5 s of playback while its kind had some")

  /// Which of `candidates` (the first video output, the first audio output) moves the position and
  /// reports the gaps: the first that has not failed, unless it has presented nothing since the play or
  /// the seek while a later one has presented for ``PlaybackTimeline/prerollLimit`` of media — then that
  /// one (O40: the video's channel may carry nothing, and the audio goes on). So the audio's first
  /// frames before the video's do not take the position, nor a hole's report, from the video.
  private static func driver(of candidates: [OutputID], in state: State) -> OutputID? {
    let alive = candidates.filter { !state.failedOutputs.contains($0) }
    guard let first = alive.first else { return nil }
    if state.presentingOutputs.contains(first) { return first }
    for other in alive.dropFirst() {
      guard let span = state.presentedSpan[other], let played = try? span.latest - span.first else { continue }
      if played >= PlaybackTimeline.prerollLimit { return other }
    }
    return first
  }

  /// A bound channel carries nothing (O40): its output fails once the position reaches `time` (the media
  /// of its kind kept coming for 5 s of playback), or at the end if it does not.
  private func channelMissing(_ track: TrackID, noticedAt time: MediaTime, generation: Int) {
    state.withLock { state in
      guard state.generation == generation, let binding = state.bindings.first(where: { $0.track == track }),
        !state.failedOutputs.contains(binding.id)
      else { return }
      state.mismatches[binding.id] = time
    }
  }

  private func drained(_ id: OutputID, generation: Int) {
    state.withLock { state in
      if state.generation == generation { state.drainedOutputs.insert(id) }
    }
  }

  private func outputFailed(_ id: OutputID, _ error: TiError, generation: Int) {
    let events = state.withLock { state -> (@Sendable (OutputEvent) -> Void)? in
      guard state.generation == generation, !state.failedOutputs.contains(id) else { return nil }
      state.failedOutputs.insert(id)
      return state.bindings.first { $0.id == id }?.events
    }
    events?(.failed(error))
  }

  private func crossed(_ gap: RecordingGap, by id: OutputID, candidates: [OutputID], generation: Int) {
    let report = state.withLock { state -> (@Sendable (RecordingGap) -> Void, [RecordingGap], Int)? in
      guard state.generation == generation, candidates.contains(id) else { return nil }
      guard Self.driver(of: candidates, in: state) == id else {
        if !state.presentingOutputs.contains(id) { state.earlyGaps[id, default: []].append(gap) }
        return nil
      }
      return Self.admit([gap], &state)
    }
    if let (handler, gaps, play) = report { deliver(play: play) { for gap in gaps { handler(gap) } } }
  }

  /// Gaps the position crossed: those to report now, with the handler and the play; after a recording
  /// that failed for good they wait for media that plays (R73).
  private static func admit(_ gaps: [RecordingGap], _ state: inout State)
    -> (@Sendable (RecordingGap) -> Void, [RecordingGap], Int)?
  {
    var now: [RecordingGap] = []
    for gap in gaps {
      state.reportNext = true
      if failure(of: gap) != nil || !state.heldGaps.isEmpty {
        state.heldGaps.append(gap)
      } else {
        now.append(gap)
      }
    }
    state.reportedRanges = Array((state.reportedRanges + now.map(\.range)).suffix(64))
    guard !now.isEmpty, let handler = state.onRecordingGap else { return nil }
    return (handler, now, state.playNumber)
  }

  /// The error a gap's failure ends a play with when nothing after it plays (R57–R59, R73); nil for a
  /// gap that is never an error (a hole, no keyframe yet, a channel without media).
  static func failure(of gap: RecordingGap) -> TiError? {
    for reason in gap.reasons {
      switch reason {
      case .notFound: return TiError(.recordingNotFound, "the recording at \(gap.range) does not exist")
      case .downloadFailed:
        return TiError(.recordingDownloadFailed, "the recording at \(gap.range) could not be downloaded")
      case .integrityFailed, .decryptionFailed, .mediaUnreadable:
        return TiError(.recordingUnreadable, "the recording at \(gap.range) cannot be read (\(reason))")
      case .unsupportedMedia:
        return TiError(.unsupportedFormat, "the recording at \(gap.range) has an unsupported format")
      case .unknown, .noKeyFrame, .noRecording, .trackUnavailable: continue
      }
    }
    return nil
  }

  private func completed(generation: Int, candidates: [OutputID]) {
    // Gaps the driver crossed before it took over and presented nothing since (the first failed) are the
    // play's.
    let (failure, early) = state.withLock {
      state -> (TiError?, (@Sendable (RecordingGap) -> Void, [RecordingGap], Int)?) in
      guard state.generation == generation else { return (nil, nil) }
      var early: (@Sendable (RecordingGap) -> Void, [RecordingGap], Int)?
      if !state.earlyGaps.isEmpty {
        let fallback = Self.driver(of: candidates, in: state)
        let gaps = fallback.flatMap { state.earlyGaps[$0] } ?? []
        state.earlyGaps = [:]
        early = Self.admit(gaps, &state)
      }
      // Nothing played after a recording that failed for good: the play ends with its error (R73).
      return (state.heldGaps.lazy.compactMap(Self.failure(of:)).last, early)
    }
    if let (handler, gaps, play) = early { deliver(play: play) { for gap in gaps { handler(gap) } } }
    if let failure { return failed(failure, generation: generation) }
    var ended: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)] = []
    var outputs: [@Sendable (OutputEvent) -> Void] = []
    var mismatched: [@Sendable (OutputEvent) -> Void] = []
    var waiter: Waiter?
    let handlers = state.withLock { state -> ((@Sendable (Int64) -> Void)?, (@Sendable () -> Void)?, Int64, Int)? in
      guard state.generation == generation, state.active, let play = state.play else { return nil }
      // An output whose channel carried nothing fails rather than completes, even where nothing
      // presented moved the position to the time its mismatch was noticed (O40).
      mismatched = state.bindings.filter { state.mismatches[$0.id] != nil && !state.failedOutputs.contains($0.id) }
        .compactMap(\.events)
      outputs = state.bindings.filter {
        state.drainedOutputs.contains($0.id) && !state.failedOutputs.contains($0.id) && state.mismatches[$0.id] == nil
      }
      .compactMap(\.events)
      state.drainedOutputs = []
      state.mismatches = [:]
      state.active = false
      state.paused = false
      let moved = state.position != play.end
      state.position = play.end
      state.lastReported = play.end
      ended = state.recorders
      state.recorders = []
      waiter = state.waiters.removeValue(forKey: state.playNumber)
      return (moved ? state.onTimeChanged : nil, state.onCompleted, play.end, state.playNumber)
    }
    for events in mismatched {
      events(.failed(Self.channelMismatch))
    }
    for events in outputs { events(.completed) }
    endRecorders(ended, naturally: true)
    guard let (time, done, end, play) = handlers else { return }
    deliver(play: play) {
      time?(end)
      done?()
    }
    // Delivered after the callbacks, whether or not a new play drops them meanwhile.
    if let waiter { environment.deliver { waiter.end(.success(.completed)) } }
  }

  private func failed(_ error: TiError, generation: Int) {
    var ended: [(recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)] = []
    var waiter: Waiter?
    let handler = state.withLock { state -> (ErrorHandler?, Int)? in
      guard state.generation == generation, state.active else { return nil }
      state.active = false
      state.paused = false
      ended = state.recorders
      state.recorders = []
      waiter = state.waiters.removeValue(forKey: state.playNumber)
      return (state.onError, state.playNumber)
    }
    endRecorders(ended)
    guard let (handler, play) = handler else { return }
    let graph = state.withLock { $0.generation == generation ? $0.graph : nil }
    graph?.pipeline.stop()
    if let handler { deliver(play: play) { handler(error) } }
    if let waiter { environment.deliver { waiter.end(.failure(error)) } }
  }

  /// Delivers a play's callback, unless a stop or a new play came before it ran (R70).
  private func deliver(play: Int, _ body: @escaping @Sendable () -> Void) {
    environment.deliver { [weak self] in
      guard let self, state.withLock({ $0.playNumber == play }) else { return }
      body()
    }
  }
}
