import Foundation
import Nodes
import PipelineGraph

/// The graph a Replay plays with, and how it is built and started.
extension Replay {
  /// One graph: what a play, a seek or a binding change started.
  final class Graph: @unchecked Sendable {
    let pipeline: Pipeline
    let source: CloudSegmentSource
    /// An output presents (else recorders alone take what is read).
    let presents: Bool
    let pacers: [Pacer]
    /// The pacers of its video outputs.
    let videoPacers: [Pacer]
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
    /// Video frames dropped as late, by every video output's pacer.
    var dropped: Int { videoPacers.reduce(0) { $0 + $1.statistics.dropped.load(ordering: .relaxed) } }
    /// Video frames presented late so far (the pacers' ``Pacer/Counters/late``).
    var late: Int { videoPacers.reduce(0) { $0 + $1.statistics.late.load(ordering: .relaxed) } }
  }

  /// One output as a graph is built for it: what the rules know and what it presents to.
  struct Binding {
    let output: ReplayStateMachine.Output
    let attachment: Attachment
    var id: OutputID { output.id }
    var track: TrackID { output.track }
    var channel: UInt8 { output.track.channel }
    var isVideo: Bool { output.isVideo }
    var joinsAt: MediaTime? { output.joinsAt }
  }

  /// What one graph is built from.
  struct Plan {
    var start: ReplayStateMachine.Start
    var bindings: [Binding]
    /// The tracks recorders need.
    var recordedTracks: Set<TrackID> = []
  }

  /// The graph a play of `[startTimeMs, endTimeMs)` runs with the current bindings, built but not
  /// started (for `tipipe graph replay`: nodes, typed edges and their bounds); `notBound` without any
  /// output.
  public func configuration(startTimeMs: Int64, endTimeMs: Int64) throws -> Pipeline {
    let (bindings, speed) = perform { state in (Self.bindings(state.rules.outputs, state), state.rules.speed) }
    guard !bindings.isEmpty else { throw TiError(.notBound, "a replay needs an output") }
    let range = MediaRange(startMilliseconds: startTimeMs, endMilliseconds: endTimeMs)
    let start = ReplayStateMachine.Start(
      range: range, play: .init(start: range.start, end: range.end, token: ""), outputs: bindings.map(\.output),
      speed: speed, paused: false, generation: -1, presentFrom: range.start, showsFirstFrameWhilePaused: true)
    return try build(Plan(start: start, bindings: bindings)).pipeline
  }

  private static func bindings(_ outputs: [ReplayStateMachine.Output], _ state: Control) -> [Binding] {
    outputs.compactMap { output in state.attachments[output.id].map { Binding(output: output, attachment: $0) } }
  }

  /// Starts the graph of a play or a seek (from the target), or of a binding change (`restarting`:
  /// from the position, the outputs already playing going on after the frame they presented last).
  func start(restarting: Bool) {
    let plan = perform { state -> Plan? in
      guard let start = state.rules.start(restarting: restarting, recording: !state.recorders.isEmpty) else {
        return nil
      }
      return Plan(
        start: start, bindings: Self.bindings(start.outputs, state),
        recordedTracks: state.recorders.reduce(into: Set<TrackID>()) { $0.formUnion($1.recorder.tracks) })
    }
    guard let plan else { return }
    var installed: Graph?
    do {
      let graph = try build(plan)
      let current = perform { state -> Bool in
        guard state.rules.generation == plan.start.generation else { return false }
        state.graph = graph
        installed = graph
        graph.source.readsAhead = Self.readsAhead(state)
        // A pause or a speed change made while the graph was being built reached no pacer.
        if state.rules.paused != plan.start.paused || state.rules.speed != plan.start.speed {
          for pacer in graph.pacers {
            pacer.setRate(state.rules.speed.rate)
            state.rules.paused ? pacer.pause() : pacer.resume()
          }
        }
        return true
      }
      guard current else { return }
      try graph.pipeline.start()
    } catch {
      // A seek may have flushed the installed graph since: its failure belongs to the current generation.
      let generation = perform { state in
        installed != nil && state.graph === installed ? state.rules.generation : plan.start.generation
      }
      failed(TiError(error), generation: generation)
    }
  }

  private func build(_ plan: Plan) throws -> Graph {
    let pipeline = Pipeline(executor: environment.executor, clock: environment.clock, workers: environment.workers)
    let range = plan.start.range
    let generation = plan.start.generation
    let primaryVideo = plan.bindings.first { $0.isVideo }
    let primaryAudio = plan.bindings.first { !$0.isVideo }
    // The position follows one branch: the first video output, else the first audio output (see
    // `ReplayStateMachine.driver(of:)`).
    let candidates = [primaryVideo?.id, primaryAudio?.id].compactMap { $0 }
    // Read-ahead: see `readsAhead(_:)`.
    let source = CloudSegmentSource(
      service: service, range: range, token: plan.start.play.token, prefetchBytes: 16 << 20,
      readsAhead: candidates.isEmpty || !plan.start.paused, stallBudget: environment.stallBudget)
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
    let (tappedRecorders, tappedDumps) = perform { ($0.tappedRecorders, $0.tappedDumps) }
    let tap = RecorderTap(paced: !candidates.isEmpty, recorders: tappedRecorders)
    if plan.recordedTracks.contains(where: { $0.kind == .audio }) {
      // An MP4 carries no G.711: recorded audio passes a transcoder to AAC first (T19); AAC passes as is.
      let transcoder = try AudioTranscoder()
      pipeline.connect(detector, to: transcoder, limits: EdgeLimits(items: 256, bytes: 4 << 20))
      pipeline.connect(transcoder, to: tap, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    } else {
      pipeline.connect(detector, to: tap, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    }
    // Raw dumps capture any channel as read, bound or not.
    let dumpTap = RawDumpTap(dumps: tappedDumps)
    pipeline.connect(demuxer, to: dumpTap, limits: EdgeLimits(items: 256, bytes: 4 << 20))

    var pacers: [Pacer] = []
    var videoPacers: [Pacer] = []
    var owners: [ObjectIdentifier: OutputID] = [:]
    // One clock anchor for every output: audio and video of the same time are presented together; a hole
    // is where the detector's tracks all have a gap.
    let timeline = PlaybackTimeline(
      tracks: Set([primaryVideo?.track, primaryAudio?.track].compactMap { $0 }), rate: plan.start.speed.rate,
      paused: plan.start.paused, startLatency: PlaybackTimeline.playerStartLatency)
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
      guard self.perform({ $0.rules.generation == failedIn }) else { return .endBranch }
      // A branch's own failure (decoding, presentation) fails that output only; anything upstream ends
      // the play.
      if let owner = owners[failure.nodeID] {
        self.outputFailed(owner, TiError(failure), generation: failedIn)
        return .endBranch
      }
      self.failed(TiError(failure), generation: failedIn)
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
    let generation = plan.start.generation
    let id = binding.id
    let name = binding.isVideo ? "Video\(binding.channel)" : "Audio\(binding.channel)"
    // One thread: frame threads would hold back a frame each, and a seek's first picture, a step while
    // paused and the frame shown at a gap must come out with their own packet (ExoPlayer and ffplay
    // play with low-delay decoders for the same reason).
    let decoder = try FrameDecoder(name: "\(name)Decoder", track: binding.track, threads: 1)
    let joining = binding.joinsAt
    let presentFrom = joining ?? plan.start.presentFrom
    let pacer: Pacer
    /// Shows or plays a frame the rules accepted.
    let present: @Sendable (DecodedFrame) -> Void
    /// What a flush of the branch does beside the Replay's rules (an audio device drops what it holds).
    var flushed: @Sendable () -> Void = {}
    switch binding.attachment.target {
    case .video(let renderer):
      // A seek while paused shows the target's frame (R35); a play never starts paused. The clock starts
      // with the picture: audio waits for the first frame of the video decoding from the keyframe
      // before the target (video missing holds it back up to the preroll limit). Audio does not preroll:
      // an audio track without media, or with a gap there, would hold the picture back as long. An
      // output that joins a running play holds back nothing.
      pacer = Pacer(
        name: "\(name)Pacer", rate: plan.start.speed.rate, paused: plan.start.paused, presentFrom: presentFrom,
        showsFirstFrameWhilePaused: plan.start.showsFirstFrameWhilePaused || joining != nil,
        showsFirstFrameAfterSeek: true, timeline: timeline, prerolls: joining == nil)
      present = { renderer.render($0) }
    case .audio(let device):
      // With video, audio is muted and not presented off 1×; alone it paces the position.
      let audioOnly = !plan.bindings.contains { $0.isVideo }
      // With a picture to keep in step, a device that says how long it holds what it plays gets its
      // audio ahead by the lead, and the play's clock (a SlewedClock) follows what it actually plays: the
      // audio master clock. Alone, audio paces the position itself (a lead would put it ahead).
      let clock = !audioOnly && device.latency != nil ? environment.clock as? SlewedClock : nil
      let lead = clock == nil ? MediaDuration.zero : Pacer.audioLead
      pacer = Pacer(
        name: "\(name)Pacer", rate: plan.start.speed.rate, paused: plan.start.paused, presentFrom: presentFrom,
        muted: !audioOnly, timeline: timeline, prerolls: false, lead: lead)
      // Speed and volume as published: an audio frame takes no Replay lock.
      let levels = LevelsReader(perform { $0.levels })
      // On the executor, in order with the frames: nothing the device holds from before a seek is heard
      // after it (the seek's caller flushed it at once too; a frame may have been under way).
      flushed = { device.flush() }
      present = { frame in
        let current = levels.current
        guard current.normalSpeed, let volume = current.volumes[id] else { return }
        guard let clock else { return device.play(frame, volume: volume) }
        device.play(frame, volume: volume, in: timeline, following: clock)
      }
    }
    let video = binding.isVideo
    let sink = PresentationSink(
      name: "\(name)Output",
      onFrame: { [weak self] frame, flushes in
        guard let self,
          self.presented(frame, by: id, video: video, candidates: candidates, generation: generation + flushes)
        else { return }
        present(frame)
      },
      onEvent: { [weak self] event, flushes in
        if case .gap(let gap) = event, gap.concerns(binding.track) {
          self?.crossed(gap, by: id, candidates: candidates, generation: generation + flushes)
        }
      },
      onEnd: { [weak self] flushes in self?.drained(id, generation: generation + flushes) }, onFlush: flushed)
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
    pipeline.connect(decoder, to: pacer, limits: EdgeLimits(items: binding.isVideo ? 1 : 16))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: binding.isVideo ? 2 : 4))
    return (pacer, nodes)
  }

}

/// An audio branch's view of the Replay's published levels, kept by its present closure, which runs on
/// the branch's executor only (so the reader's cache needs no lock of its own).
final class LevelsReader: @unchecked Sendable {
  private var reader: Published<Replay.AudioLevels>.Reader

  init(_ levels: Published<Replay.AudioLevels>) { reader = levels.reader() }

  /// The levels now (one atomic load unless they changed).
  var current: Replay.AudioLevels { reader.current }
}
