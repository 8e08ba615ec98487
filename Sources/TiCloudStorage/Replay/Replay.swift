import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// Replay as a graph configuration: plays a device's recordings of a range at one of seven speeds,
/// with pause, seek, gaps reported as they are crossed, and the position as it advances.
///
/// Each play (and each change of the output that drives the position) builds
/// `CloudSegmentSource → SegmentVerifier → SegmentDemuxer → TrackRouter → GapDetector ─┬→ FrameDecoder → Pacer → PresentationSink (video)`
/// `                                                                                   └→ FrameDecoder → Pacer(muted off 1×) → PresentationSink (audio)`
/// over any `RecordingService` (`file://` or `http(s)://`), on the environment's executor and clock.
/// A seek flushes that graph in place (`Pipeline.seek(to:)`: a seek event travels from the sinks to the
/// source, which flushes the graph to the target, as GStreamer's flushing seek): the source lists and fetches
/// from the target, the demuxer starts at the keyframe at or before it, decoders restart, and the pacers
/// present nothing earlier. The latest seek wins, and what the graph did before it (frames, gaps, its
/// end) is dropped by flush generation. Another output bound while the play runs joins that graph as a
/// branch (`Pipeline.attach(_:)`: nothing is read again), and leaves it the same way when unbound; a
/// recorder added then gets from the `RecorderTap` what it kept of the last seconds read. The source reads ahead (16 MB) while the play runs and not
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
/// replaced play are dropped. Every method may be called from any thread; a command called off the
/// environment's executor waits until the executor has run it.
///
/// This is the engine of the seed's `TiCloudStorageReplay`; the SDK object adds the instance, the
/// Outputs and the lifecycle rules on top of it.
///
/// The rules live in a `ReplayStateMachine` (a value), held with everything else the Replay knows on
/// its control executor — the environment's, which runs its graphs too (`Replay+Control.swift`: SDK
/// calls are commands run there, getters read what it published, callbacks leave it through
/// `deliver`); this class feeds the rules the SDK's calls and the graph's events and performs what they
/// answer. Graph building is in `ReplayGraph.swift`, outputs, recorders and raw dumps in
/// `Replay+Outputs.swift`, the graph's events in `Replay+GraphEvents.swift`.
package final class Replay: @unchecked Sendable {
  /// A play's failure (token, network, listing, unreadable recording).
  package typealias ErrorHandler = @Sendable (TiError) -> Void

  /// Called with the position (the facade reports it in UTC ms).
  package var onTimeChanged: (@Sendable (MediaTime) -> Void)? {
    get { handlers.value.onTimeChanged }
    set { handlers.update { $0.onTimeChanged = newValue } }
  }
  /// Called when a play fails.
  package var onError: ErrorHandler? {
    get { handlers.value.onError }
    set { handlers.update { $0.onError = newValue } }
  }
  /// Called when a play's range is exhausted.
  package var onCompleted: (@Sendable () -> Void)? {
    get { handlers.value.onCompleted }
    set { handlers.update { $0.onCompleted = newValue } }
  }
  /// Called for each gap the position crosses.
  package var onRecordingGap: (@Sendable (RecordingGap) -> Void)? {
    get { handlers.value.onRecordingGap }
    set { handlers.update { $0.onRecordingGap = newValue } }
  }

  /// Called, in the `seek` call that superseded it, with the target of a seek that never took effect
  /// and the new target (R32: the last seek wins; the one it replaced is reported, not silently lost).
  package var onSeekSuperseded: (@Sendable (_ superseded: MediaTime, _ by: MediaTime) -> Void)? {
    get { handlers.value.onSeekSuperseded }
    set { handlers.update { $0.onSeekSuperseded = newValue } }
  }

  let service: any RecordingService
  let environment: ReplayEnvironment
  /// The callbacks: set from any thread, read on the executor.
  let handlers = Published(Handlers())
  /// What the Replay knows, on its control executor only (`perform(_:)`).
  var control: Control
  /// What the getters read, published by the executor (`perform(_:)`).
  let facts = Published(Facts())
  /// The position in µs (`noPosition`: none), the frames presented and the play's number, as the
  /// executor last published them.
  let position = Atomic<Int64>(Replay.noPosition)
  let videoFrames = Atomic(0)
  let audioFrames = Atomic(0)
  let playNumber = Atomic(0)

  /// Identifies one output bound to the replay.
  package struct OutputID: Hashable, Sendable {
    let value: Int
  }

  /// What happens to one bound output, on the graph's executor.
  package enum OutputEvent: Sendable {
    /// The branch presented its first frame since the play, the seek or the binding.
    case presenting
    /// The play's range was exhausted and the branch has drained.
    case completed
    /// The branch's own decoding or presentation failed; the play and the other outputs go on.
    case failed(TiError)
  }

  /// Where an output's branch presents: a renderer for video, a device for audio.
  package enum OutputTarget {
    /// Video frames go to the renderer.
    case video(any VideoRenderer)
    /// Audio frames go to the device.
    case audio(any AudioDevice)
  }

  /// What a bound output presents to, beside what the rules know of it.
  struct Attachment {
    let target: OutputTarget
    var volume = 100
    let events: (@Sendable (OutputEvent) -> Void)?
  }

  /// What audio branches read per frame: audio plays only at 1×, at its output's volume.
  struct AudioLevels: Sendable {
    var normalSpeed = true
    var volumes: [OutputID: Int] = [:]
  }

  /// A recording task of the play, and what to call when the play ends for it.
  typealias RecorderEntry = (recorder: ReplayRecorder, onEnd: @Sendable (Bool) -> Void)

  /// A replay of the recordings `service` holds, running in `environment`, at `speed` (kept across plays).
  package init(service: any RecordingService, environment: ReplayEnvironment = .realtime(), speed: ReplaySpeed = .x1) {
    self.service = service
    self.environment = environment
    control = Control(handlers: handlers)
    control.rules.speed = speed
    control.publishLevels()
    control.published = Facts(control)
    facts.publish(control.published)
  }

  deinit {
    control.graph?.pipeline.stop()
  }

  // MARK: Playing

  /// The current speed (kept across plays).
  package var speed: ReplaySpeed { facts.value.speed }

  /// The position as last published; nil before the play has one (and after `stop`).
  package var currentTime: MediaTime? {
    let microseconds = position.load(ordering: .acquiring)
    return microseconds == Self.noPosition ? nil : MediaTime(microseconds: microseconds)
  }

  /// Frames presented (video, audio) and video frames dropped as late, over every play so far.
  package var statistics: (videoFrames: Int, audioFrames: Int, droppedFrames: Int) {
    let facts = facts.value
    return (
      videoFrames.load(ordering: .relaxed), audioFrames.load(ordering: .relaxed),
      facts.droppedBefore + (facts.graph?.dropped ?? 0)
    )
  }

  /// Video frames presented late (later than their scaled duration after their time; at 1× and slower
  /// they are shown, not dropped), over every play so far.
  package var lateVideoFrames: Int {
    let facts = facts.value
    return facts.lateBefore + (facts.graph?.late ?? 0)
  }

  /// The last video frame presented (for snapshots): kept after pause, stop and completion. Read on the
  /// executor (a caller elsewhere waits for it).
  package var lastPresentedFrame: DecodedFrame? { perform { $0.lastFrame } }

  /// The graph of the active play (nil without one), for its shape and statistics
  /// (`Pipeline.statistics()`, read while it is idle). A seek flushes it in place; an output's branch
  /// joins or leaves it in place, unless the output would drive the position (the first of its kind; one
  /// that leaves hands its place to another output of its track that presents, the last picture to the
  /// sound beside it), nothing presented yet,
  /// or the play is paused and its history no longer holds the position; a recorder joins its tap in
  /// place, unless the tap let go of
  /// what the recorder starts with or the recorder needs a track or a transcoder the graph lacks.
  package var activeGraph: Pipeline? {
    let facts = facts.value
    return facts.active ? facts.graph?.pipeline : nil
  }

  /// Plays `range` from `initial` (or its start) with `token`.
  ///
  /// `invalidArgument` for an empty range or an initial time outside it, `notBound` without any output;
  /// either way the current play goes on untouched. Accepting a play stops the previous one without its
  /// callbacks; the speed, bindings and volumes are kept, a pause is not.
  @discardableResult
  package func play(_ range: MediaRange, from initial: MediaTime? = nil, token: String) -> TiErrorCode {
    begin(range, from: initial, token: token, waiter: nil)
  }

  /// Hands `waiters` (of plays a stop or a new play ended) their ending `stopped`, through `deliver`,
  /// after anything already delivered.
  private func releaseWaiters(_ waiters: [Waiter]) {
    guard !waiters.isEmpty else { return }
    environment.deliver { for waiter in waiters { waiter.end(.success(.stopped)) } }
  }

  func begin(_ range: MediaRange, from initial: MediaTime?, token: String, waiter: Waiter?) -> TiErrorCode {
    var ended: [RecorderEntry] = []
    var released: [Waiter] = []
    let (code, tooLarge, play) = perform { state -> (TiErrorCode, Bool, Int) in
      let (code, tooLarge) = state.rules.play(range, from: initial, token: token)
      guard code == .ok else { return (code, false, 0) }
      ended = state.takeRecorders()
      released = Array(state.waiters.values)
      state.waiters = [:]
      if let waiter {
        state.waiters[state.rules.playNumber] = waiter
        waiter.started(state.rules.playNumber)
      }
      state.lastFrame = nil
      state.retireGraph()?.pipeline.stop()
      let executor = environment.executor
      // A local library's objects are read again from the page cache for about what keeping them costs,
      // and kept, an encrypted one would be copied whole before its decryption (the verifier decrypts in
      // place only bytes nothing else holds): only objects fetched over the network are kept.
      state.objects = service.readsLocalFiles ? nil : RecentObjects(service: service) { executor.execute($0) }
      for device in state.audioDevices {
        device.flush()
        device.setPaused(false)
      }
      return (.ok, tooLarge, state.rules.playNumber)
    }
    guard code == .ok else { return code }
    endRecorders(ended)
    releaseWaiters(released)
    // Over 10 days the play is accepted and ends through onError (R21), as a listing of that span would.
    guard !tooLarge else {
      environment.executor.execute { [weak self] in
        self?.failed(TiError(.rangeTooLarge, "a play spans at most 10 days"), play: play)
      }
      return .ok
    }
    start(restarting: false)
    return .ok
  }

  /// The longest span a play reads: 10 days, as a listing.
  package static let maximumSpan = ReplayStateMachine.maximumSpan

  /// Halts playback; idempotent. `notStarted` without an active play.
  @discardableResult
  package func pause() -> TiErrorCode { setPaused(true) }

  /// Continues from where playback paused; idempotent. `notStarted` without an active play.
  @discardableResult
  package func resume() -> TiErrorCode { setPaused(false) }

  /// True while a play is running or paused.
  package var isActive: Bool { facts.value.active }

  /// True while the active play is paused.
  package var isPaused: Bool { facts.value.paused }

  private func setPaused(_ paused: Bool) -> TiErrorCode {
    perform { state in
      guard state.rules.setPaused(paused) else { return .notStarted }
      // Told in the command, so that the pacers and devices follow the commands in their order.
      if let graph = state.graph {
        graph.source.readsAhead = Self.readsAhead(state)
        for pacer in graph.pacers { paused ? pacer.pause() : pacer.resume() }
      }
      // What a device holds stops with the picture and goes on with it.
      for device in state.audioDevices { device.setPaused(paused) }
      return .ok
    }
  }

  /// Whether the active graph's source reads ahead of what it emits: not while paused (a paused play
  /// downloads no more than its edges hold, a few objects, as a player on a metered link should, and a
  /// snapshot of a paused play reads little more than it shows); always when nothing presents
  /// (recorders alone). Reading ahead from the first object on matters at high speeds: deferred until the
  /// first frame, the read-ahead competed with 8× decoding on one core and frames came late.
  static func readsAhead(_ state: Control) -> Bool {
    guard let graph = state.graph, graph.presents else { return true }
    return !state.rules.paused
  }

  /// Changes the speed at once, keeping the position (no seek); applies to later plays too.
  @discardableResult
  package func setSpeed(_ speed: ReplaySpeed) -> TiErrorCode {
    perform { state in
      state.rules.speed = speed
      state.publishLevels()
      for pacer in state.graph?.pacers ?? [] { pacer.setRate(speed.rate) }
    }
    return .ok
  }

  /// Moves the play to `time`: the first frame presented is the first whose time is not earlier than
  /// it (inside a gap: the first after it). Keeps the speed and the pause (while paused, that first
  /// frame is shown and ``currentTime`` moves to it). The latest seek wins.
  /// `notStarted` without an active play, `invalidArgument` outside the play's range.
  @discardableResult
  package func seek(to time: MediaTime) -> TiErrorCode {
    var flushed = false
    let outcome = perform { state -> Result<MediaTime?, TiError> in
      let superseded: MediaTime?
      switch state.rules.seek(to: time) {
      case .failure(let refusal): return .failure(refusal)
      case .success(let target): superseded = target
      }
      // The running graph seeks in place: a seek event leaves its sinks and the source flushes the graph
      // to the target (on the executor, with the rules' change, so that its pipeline's generations keep
      // in step with ours); only a play without one builds a graph.
      if let graph = state.graph {
        graph.pipeline.seek(to: state.rules.target)
        flushed = true
      }
      // The sound before the seek is not heard after it.
      for device in state.audioDevices { device.flush() }
      return .success(superseded)
    }
    switch outcome {
    case .failure(let error): return error.code
    case .success(let superseded):
      if let superseded, let handler = handlers.value.onSeekSuperseded { handler(superseded, time) }
      // A flushed graph's recorder tap marks the discontinuity in order with the packets.
      guard !flushed else { return .ok }
      for recorder in perform({ $0.recorders.map(\.recorder) }) { recorder.discontinuity() }
      start(restarting: false)
      return .ok
    }
  }

  /// Ends the play without `onCompleted` or `onError`; keeps bindings, speed and the last frame;
  /// idempotent.
  @discardableResult
  package func stop() -> TiErrorCode {
    var ended: [RecorderEntry] = []
    var released: [Waiter] = []
    perform { state in
      state.rules.stop()
      released = Array(state.waiters.values)
      state.waiters = [:]
      ended = state.takeRecorders()
      state.retireGraph()?.pipeline.stop()
      state.objects = nil
      for device in state.audioDevices {
        device.flush()
        device.setPaused(false)
      }
    }
    endRecorders(ended)
    releaseWaiters(released)
    return .ok
  }

  /// The bindings or recorders changed while a play runs: a new graph from the current position, in
  /// which the outputs already playing go on after their last frame and a new one starts at the next
  /// keyframe. With no output left the play reads nothing until one is bound again.
  func restart() {
    let recorders = perform { state -> [ReplayRecorder] in
      guard state.rules.restart() else { return [] }
      state.retireGraph()?.pipeline.stop()
      return state.recorders.map(\.recorder)
    }
    for recorder in recorders { recorder.restarted() }
    start(restarting: true)
  }

  /// Stops the play from the executor, without waiting for it (a deinit that may run under a lock the
  /// executor takes).
  func stopWithoutWaiting() {
    environment.executor.execute { [self] in stop() }
  }

  /// The play ended (`naturally` at its range's end): every recorder's `onEnd` (T7, T17).
  func endRecorders(_ ended: [RecorderEntry], naturally: Bool = false) {
    for entry in ended { entry.onEnd(naturally) }
  }
}
