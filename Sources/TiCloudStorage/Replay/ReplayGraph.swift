import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// The graph a Replay plays with, and how it is built and started.
extension Replay {
  /// One graph: what a play or a seek without a graph started, or a binding change the running graph
  /// could not take in (the position's driver changed).
  final class Graph: @unchecked Sendable {
    let pipeline: Pipeline
    let source: CloudSegmentSource
    /// An output presents (else recorders alone take what is read).
    let presents: Bool
    /// The replay's generation when it was built: each seek flushes it (one pipeline generation more)
    /// and bumps the replay's, so its events of pipeline generation g belong to replay generation
    /// `base + g`.
    let base: Int
    /// What an output's branch hangs on and shares; its branches. Confined to the executor.
    let joints: Joints
    /// Every output's pacer (video ones apart), and what those that left counted: read by getters on
    /// any thread.
    private let pacerBook = Locked(PacerBook())

    init(pipeline: Pipeline, source: CloudSegmentSource, base: Int, joints: Joints) {
      self.pipeline = pipeline
      self.source = source
      presents = !joints.candidates.isEmpty
      self.base = base
      self.joints = joints
    }

    /// The output branches' pacers.
    var pacers: [Pacer] { pacerBook.withLock { $0.pacers.values.map(\.pacer) } }
    /// Video frames dropped as late, by every video output's pacer (those that left included).
    var dropped: Int {
      pacerBook.withLock { book in
        book.videoPacers.reduce(book.droppedGone) { $0 + $1.statistics.dropped.load(ordering: .relaxed) }
      }
    }
    /// Video frames presented late so far (the pacers' ``Pacer/Counters/late``), those that left included.
    var late: Int {
      pacerBook.withLock { book in
        book.videoPacers.reduce(book.lateGone) { $0 + $1.statistics.late.load(ordering: .relaxed) }
      }
    }

    /// Notes a branch that joined (on the executor).
    func joined(_ id: OutputID, _ branch: Branch) {
      joints.branches[id] = branch
      pacerBook.withLock { $0.pacers[id] = (branch.pacer, branch.isVideo) }
    }

    /// Forgets a branch that left (on the executor), keeping what its pacer counted; a failure of its
    /// nodes before they stop ends them quietly (`Joints.departed`).
    func left(_ id: OutputID) {
      guard let branch = joints.branches.removeValue(forKey: id) else { return }
      joints.departed.formUnion(branch.nodes.map { ObjectIdentifier($0) })
      pacerBook.withLock { book in
        book.pacers[id] = nil
        guard branch.isVideo else { return }
        book.droppedGone += branch.pacer.statistics.dropped.load(ordering: .relaxed)
        book.lateGone += branch.pacer.statistics.late.load(ordering: .relaxed)
      }
    }
  }

  /// The branches' pacers as the getters read them (the branches themselves are the executor's).
  struct PacerBook {
    var pacers: [OutputID: (pacer: Pacer, isVideo: Bool)] = [:]
    var droppedGone = 0
    var lateGone = 0
    var videoPacers: [Pacer] { pacers.values.filter(\.isVideo).map(\.pacer) }
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
    /// What the play fetched last (nil: the service itself).
    var objects: RecentObjects?
  }

  /// The graph a play of `range` runs with the current bindings, built but not started (for `tipipe
  /// graph replay`: nodes, typed edges and their bounds); `notBound` without any output.
  package func configuration(_ range: MediaRange) throws -> Pipeline {
    let (bindings, speed) = perform { state in (Self.bindings(state.rules.outputs, state), state.rules.speed) }
    guard !bindings.isEmpty else { throw TiError(.notBound, "a replay needs an output") }
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
        start: start, bindings: Self.bindings(start.outputs, state), recordedTracks: Self.recordedTracks(state),
        objects: state.objects)
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
    // A graph built again for the play reads what the play fetched last from memory.
    let source = CloudSegmentSource(
      service: plan.objects ?? service, range: range, token: plan.start.play.token, prefetchBytes: 16 << 20,
      readsAhead: candidates.isEmpty || !plan.start.paused, stallBudget: environment.stallBudget)
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: range.start, endingAt: range.end)
    // All audio passes as well when outputs present (a few kilobytes a second): an audio output that
    // joins starts at the position from the history, not from what is read next. Without a picture all
    // video passes too: a first video output joins at the next keyframe the history kept (what is read
    // next lies seconds of sound ahead: the edges hold packets, not time).
    let kinds: Set<TrackKind> = plan.bindings.isEmpty ? [] : primaryVideo == nil ? [.audio, .video] : [.audio]
    let router = TrackRouter(tracks: Set(plan.bindings.map(\.track)).union(plan.recordedTracks), kinds: kinds)
    let detector = GapDetector(
      configuration: .init(range: range, videoTrack: primaryVideo?.track, audioTrack: primaryAudio?.track))
    // The outputs' branches hang on the history: one joining a paused play shows the position from it.
    // (A graph of recorders alone has none: nothing would take its packets.)
    let history = plan.bindings.isEmpty ? nil : PacketHistory()
    // One object on each edge: the read-ahead is the source's, not the edges'.
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 1, bytes: 16 << 20))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 1, bytes: 16 << 20))
    pipeline.connect(demuxer, to: router, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    pipeline.connect(router, to: detector, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    // A short edge: what waits between the reads and the pictures (the read-ahead of a paused play, how
    // far the recorders' tap runs ahead of the position) stays what the branches' edges hold.
    if let history { pipeline.connect(detector, to: history, limits: EdgeLimits(items: 4, bytes: 4 << 20)) }
    // An output bound to a channel without media while others of its kind have some fails with 6130.
    let watch = ChannelWatch(tracks: Set(plan.bindings.map(\.track))) { [weak self] track, time, flushes in
      self?.channelMissing(track, noticedAt: time, generation: generation + flushes)
    }
    pipeline.connect(demuxer, to: watch, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    // Recording tasks get what the play reads (their tasks come and go while it runs).
    let (tappedRecorders, tappedDumps, levels) = perform { ($0.tappedRecorders, $0.tappedDumps, $0.levels) }
    let tap = RecorderTap(paced: !candidates.isEmpty, recorders: tappedRecorders)
    let transcodesAudio = plan.recordedTracks.contains { $0.kind == .audio }
    if transcodesAudio {
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

    // One clock anchor for every output: audio and video of the same time are presented together; a hole
    // is where the detector's tracks all have a gap.
    let timeline = PlaybackTimeline(
      tracks: Set([primaryVideo?.track, primaryAudio?.track].compactMap { $0 }), rate: plan.start.speed.rate,
      paused: plan.start.paused, startLatency: PlaybackTimeline.playerStartLatency)
    let joints = Joints(
      router: router, detector: detector, history: history, watch: watch, tap: tap, transcodesAudio: transcodesAudio,
      timeline: timeline, candidates: candidates,
      timedKinds: Set([primaryVideo, primaryAudio].compactMap { $0?.track.kind }))
    let graph = Graph(pipeline: pipeline, source: source, base: generation, joints: joints)
    let start = BranchStart(
      speed: plan.start.speed, paused: plan.start.paused, presentFrom: plan.start.presentFrom,
      resumesAfter: plan.start.resumesAfter,
      showsFirstFrameWhilePaused: plan.start.showsFirstFrameWhilePaused, levels: levels)
    for binding in plan.bindings {
      graph.joined(binding.id, try connectBranch(for: binding, of: graph, start: start, in: pipeline))
    }
    pipeline.errorHandler = { [weak self, weak joints] failure in
      guard let self else { return .stopPipeline }
      // A failure of what a seek has already discarded (a transfer that failed just before it) ends only
      // that node's part of the old generation (resuming would let a source throw again and again before
      // the flush is reached): the flush on its way restarts it, and the graph goes on from the target.
      let failedIn = generation + failure.generation
      guard self.perform({ $0.rules.generation == failedIn }) else { return .endBranch }
      // A branch's own failure (decoding, presentation) fails that output only; anything upstream ends
      // the play. (On the executor, where the branches are joined and cut.)
      // A branch on its way out (cut, its nodes not stopped yet) ends without a word. (The branches in the
      // graph are asked first: a node of a branch that left may be gone, and its address taken by one
      // that joined since.)
      if let owner = joints?.owner(of: failure.nodeID) {
        self.outputFailed(owner, TiError(failure), generation: failedIn)
        return .endBranch
      }
      if joints?.departed.contains(failure.nodeID) == true { return .endBranch }
      self.failed(TiError(failure), generation: failedIn)
      return .stopPipeline
    }
    pipeline.onEndOfStream = { [weak self, weak joints] flushes in
      self?.completed(generation: generation + flushes, candidates: joints?.candidates ?? candidates)
    }
    return graph
  }
}
