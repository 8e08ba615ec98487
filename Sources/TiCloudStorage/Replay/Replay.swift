import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// Replay as a graph configuration: plays a device's recordings of a range at one of seven speeds,
/// with pause, seek, gaps reported as they are crossed, and the position as it advances.
///
/// Each play (and each seek) builds
/// `CloudSegmentSource → SegmentVerifier → SegmentDemuxer → TrackRouter → GapDetector ─┬→ FrameDecoder → Pacer → PresentationSink (video)`
/// `                                                                                   └→ FrameDecoder → Pacer(muted off 1×) → PresentationSink (audio)`
/// over any ``RecordingService`` (`file://` or `http(s)://`), on the environment's executor and clock.
/// A seek replaces the graph by one that starts at the target: the latest seek wins, and the events of
/// a replaced graph are dropped. The callbacks of one play follow the seed: `onTimeChanged` at most
/// once per 100 ms of media (and at each seek, after each gap, and at the end), `onRecordingGap` once
/// per gap crossed, between the time events around it, and exactly one of `onCompleted` or `onError`
/// unless the play is stopped or replaced.
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

  private let service: any RecordingService
  private let environment: ReplayEnvironment
  private let state = Locked(State())

  struct VideoBinding {
    var channel: UInt8
    var renderer: any VideoRenderer
  }

  struct AudioBinding {
    var channel: UInt8
    var device: any AudioDevice
  }

  struct Play {
    var start: Int64
    var end: Int64
    var token: String
  }

  struct State {
    var onTimeChanged: (@Sendable (Int64) -> Void)?
    var onError: ErrorHandler?
    var onCompleted: (@Sendable () -> Void)?
    var onRecordingGap: (@Sendable (RecordingGap) -> Void)?
    var video: VideoBinding?
    var audio: AudioBinding?
    var volume = 100
    var speed = ReplaySpeed.x1
    var play: Play?
    /// True while the play is running or paused (not stopped, completed or failed).
    var active = false
    var paused = false
    var position: Int64?
    var lastReported: Int64?
    var reportNext = true
    /// Bumped by every play, seek and stop: events of an older graph are dropped.
    var generation = 0
    var graph: Graph?
    var lastFrame: DecodedFrame?
    var videoFrames = 0
    var audioFrames = 0
    var droppedBefore = 0
  }

  /// One graph: what a play or a seek started.
  final class Graph: @unchecked Sendable {
    let pipeline: Pipeline
    let pacers: [Pacer]
    init(pipeline: Pipeline, pacers: [Pacer]) {
      self.pipeline = pipeline
      self.pacers = pacers
    }
    var dropped: Int { pacers.first.map { $0.statistics.dropped.load(ordering: .relaxed) } ?? 0 }
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

  /// Presents the video of `channel` to `renderer` (from the next play or seek on).
  public func bindVideo(channel: UInt8, renderer: any VideoRenderer) {
    state.withLock { $0.video = VideoBinding(channel: channel, renderer: renderer) }
  }

  /// Plays the audio of `channel` on `device` (from the next play or seek on).
  public func bindAudio(channel: UInt8, device: any AudioDevice) {
    state.withLock { $0.audio = AudioBinding(channel: channel, device: device) }
  }

  /// Sets the audio volume, 0...100 (kept across plays); `invalidArgument` outside.
  @discardableResult
  public func setVolume(_ volume: Int) -> TiErrorCode {
    guard (0...100).contains(volume) else { return .invalidArgument }
    state.withLock { $0.volume = volume }
    return .ok
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

  /// Plays `[startTimeMs, endTimeMs)` from `initialTimeMs` (or the start) with `token`.
  ///
  /// `invalidArgument` for an empty range or an initial time outside it, `notBound` without a video
  /// binding; either way the current play goes on untouched. Accepting a play stops the previous one
  /// without its callbacks; the speed, bindings and volume are kept, a pause is not.
  @discardableResult
  public func play(startTimeMs: Int64, endTimeMs: Int64, initialTimeMs: Int64? = nil, token: String) -> TiErrorCode {
    guard MediaTime.validMilliseconds.contains(startTimeMs), MediaTime.validMilliseconds.contains(endTimeMs),
      startTimeMs < endTimeMs
    else { return .invalidArgument }
    if let initial = initialTimeMs, !(startTimeMs..<endTimeMs).contains(initial) { return .invalidArgument }
    guard state.withLock({ $0.video != nil }) else { return .notBound }
    let old = state.withLock { state -> Graph? in
      state.generation += 1
      state.play = Play(start: startTimeMs, end: endTimeMs, token: token)
      state.active = true
      state.paused = false
      state.position = nil
      state.lastReported = nil
      state.reportNext = true
      state.lastFrame = nil
      return retire(&state)
    }
    old?.pipeline.stop()
    start(from: initialTimeMs ?? startTimeMs)
    return .ok
  }

  /// Halts playback; idempotent. `notStarted` without an active play.
  @discardableResult
  public func pause() -> TiErrorCode { setPaused(true) }

  /// Continues from where playback paused; idempotent. `notStarted` without an active play.
  @discardableResult
  public func resume() -> TiErrorCode { setPaused(false) }

  private func setPaused(_ paused: Bool) -> TiErrorCode {
    let pacers = state.withLock { state -> [Pacer]? in
      guard state.active else { return nil }
      state.paused = paused
      return state.graph?.pacers ?? []
    }
    guard let pacers else { return .notStarted }
    for pacer in pacers { paused ? pacer.pause() : pacer.resume() }
    return .ok
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
    let outcome = state.withLock { state -> Result<Graph?, TiError> in
      guard state.active, let play = state.play else { return .failure(TiError(.notStarted, "no active play")) }
      guard (play.start..<play.end).contains(timeMs) else {
        return .failure(TiError(.invalidArgument, "the target is outside the play's range"))
      }
      state.generation += 1
      state.reportNext = true
      return .success(retire(&state))
    }
    switch outcome {
    case .failure(let error): return error.code
    case .success(let old):
      old?.pipeline.stop()
      start(from: timeMs)
      return .ok
    }
  }

  /// Ends the play without `onCompleted` or `onError`; keeps bindings, speed and the last frame;
  /// idempotent.
  @discardableResult
  public func stop() -> TiErrorCode {
    let old = state.withLock { state -> Graph? in
      state.generation += 1
      state.active = false
      state.paused = false
      state.position = nil
      return retire(&state)
    }
    old?.pipeline.stop()
    return .ok
  }

  /// Takes the current graph out of the state, keeping its drop count.
  private func retire(_ state: inout State) -> Graph? {
    guard let graph = state.graph else { return nil }
    state.droppedBefore += graph.dropped
    state.graph = nil
    return graph
  }

  // MARK: The graph

  /// The graph a play of `[startTimeMs, endTimeMs)` runs with the current bindings, built but not
  /// started (for `tipipe graph replay`: nodes, typed edges and their bounds); `notBound` without a video
  /// binding.
  public func configuration(startTimeMs: Int64, endTimeMs: Int64) throws -> Pipeline {
    let (video, audio, speed) = state.withLock { ($0.video, $0.audio, $0.speed) }
    guard let video else { throw TiError(.notBound, "a replay needs a video binding") }
    let play = Play(start: startTimeMs, end: endTimeMs, token: "")
    return try build(
      range: MediaRange(startMilliseconds: startTimeMs, endMilliseconds: endTimeMs), play: play, video: video,
      audio: audio, speed: speed, paused: false, generation: -1
    ).pipeline
  }

  private func start(from position: Int64) {
    let (generation, play, video, audio, speed, paused) = state.withLock {
      ($0.generation, $0.play!, $0.video!, $0.audio, $0.speed, $0.paused)
    }
    let range = MediaRange(startMilliseconds: position, endMilliseconds: play.end)
    do {
      let graph = try build(
        range: range, play: play, video: video, audio: audio, speed: speed, paused: paused, generation: generation)
      let current = state.withLock { state -> Bool in
        guard state.generation == generation else { return false }
        state.graph = graph
        return true
      }
      guard current else { return }
      try graph.pipeline.start()
    } catch {
      failed(TiError(error), generation: generation)
    }
  }

  private func build(
    range: MediaRange, play: Play, video: VideoBinding, audio: AudioBinding?, speed: ReplaySpeed, paused: Bool,
    generation: Int
  ) throws -> Graph {
    let pipeline = Pipeline(executor: environment.executor, clock: environment.clock, workers: environment.workers)
    let videoTrack = TrackID(.video, channel: video.channel)
    let audioTrack = audio.map { TrackID(.audio, channel: $0.channel) }
    let source = CloudSegmentSource(service: service, range: range, token: play.token, prefetchBytes: 16 << 20)
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: range.start, endingAt: range.end)
    let router = TrackRouter(tracks: Set([videoTrack] + (audioTrack.map { [$0] } ?? [])))
    let detector = GapDetector(
      configuration: .init(range: range, videoTrack: videoTrack, audioTrack: audioTrack, writesFile: false))
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2, bytes: 16 << 20))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2, bytes: 16 << 20))
    pipeline.connect(demuxer, to: router, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    pipeline.connect(router, to: detector, limits: EdgeLimits(items: 256, bytes: 4 << 20))

    let videoDecoder = try FrameDecoder(name: "VideoDecoder", track: videoTrack)
    // A seek while paused shows the target's frame (R35); a play never starts paused.
    let videoPacer = Pacer(
      name: "VideoPacer", rate: speed.rate, paused: paused, presentFrom: range.start, showsFirstFrameWhilePaused: true)
    videoPacer.decoder = videoDecoder
    let renderer = video.renderer
    let videoSink = PresentationSink(
      name: "VideoOutput",
      onFrame: { [weak self] frame in
        renderer.render(frame)
        self?.presented(frame, generation: generation)
      },
      onEvent: { [weak self] event in
        if case .gap(let gap) = event { self?.crossed(gap, generation: generation) }
      })
    pipeline.connect(detector, to: videoDecoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
    // Few decoded pictures wait for their instant: memory stays small at any speed.
    pipeline.connect(videoDecoder, to: videoPacer, limits: EdgeLimits(items: 4))
    pipeline.connect(videoPacer, to: videoSink, limits: EdgeLimits(items: 2))
    var pacers = [videoPacer]

    if let audio, let audioTrack {
      let audioDecoder = try FrameDecoder(name: "AudioDecoder", track: audioTrack)
      let audioPacer = Pacer(
        name: "AudioPacer", rate: speed.rate, paused: paused, presentFrom: range.start, muted: true)
      let device = audio.device
      let audioSink = PresentationSink(
        name: "AudioOutput",
        onFrame: { [weak self] frame in
          guard let self else { return }
          let volume = state.withLock { state -> Int? in
            guard state.generation == generation else { return nil }
            state.audioFrames += 1
            return state.volume
          }
          if let volume { device.play(frame, volume: volume) }
        })
      pipeline.connect(detector, to: audioDecoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
      pipeline.connect(audioDecoder, to: audioPacer, limits: EdgeLimits(items: 16))
      pipeline.connect(audioPacer, to: audioSink, limits: EdgeLimits(items: 4))
      pacers.append(audioPacer)
    }

    pipeline.errorHandler = { [weak self] failure in
      self?.failed(TiError(failure.error), generation: generation)
      return .stopPipeline
    }
    pipeline.onEndOfStream = { [weak self] in self?.completed(generation: generation) }
    return Graph(pipeline: pipeline, pacers: pacers)
  }

  // MARK: Events of the graph (on its executor)

  private func presented(_ frame: DecodedFrame, generation: Int) {
    let report = state.withLock { state -> (@Sendable (Int64) -> Void, Int64)? in
      guard state.generation == generation else { return nil }
      state.videoFrames += 1
      state.lastFrame = frame
      let position = frame.time.milliseconds
      state.position = position
      let due = state.reportNext || state.lastReported.map { position - $0 >= 100 } ?? true
      guard due, let handler = state.onTimeChanged else { return nil }
      state.reportNext = false
      state.lastReported = position
      return (handler, position)
    }
    if let (handler, position) = report { environment.deliver { handler(position) } }
  }

  private func crossed(_ gap: RecordingGap, generation: Int) {
    let handler = state.withLock { state -> (@Sendable (RecordingGap) -> Void)? in
      guard state.generation == generation else { return nil }
      state.reportNext = true
      return state.onRecordingGap
    }
    if let handler { environment.deliver { handler(gap) } }
  }

  private func completed(generation: Int) {
    let handlers = state.withLock { state -> ((@Sendable (Int64) -> Void)?, (@Sendable () -> Void)?, Int64)? in
      guard state.generation == generation, state.active, let play = state.play else { return nil }
      state.active = false
      state.paused = false
      let moved = state.position != play.end
      state.position = play.end
      state.lastReported = play.end
      return (moved ? state.onTimeChanged : nil, state.onCompleted, play.end)
    }
    guard let (time, done, end) = handlers else { return }
    environment.deliver {
      time?(end)
      done?()
    }
  }

  private func failed(_ error: TiError, generation: Int) {
    let handler = state.withLock { state -> ErrorHandler?? in
      guard state.generation == generation, state.active else { return nil }
      state.active = false
      state.paused = false
      return .some(state.onError)
    }
    guard let handler else { return }
    let graph = state.withLock { $0.generation == generation ? $0.graph : nil }
    graph?.pipeline.stop()
    if let handler { environment.deliver { handler(error) } }
  }
}
