import Nodes
import PipelineGraph
import Synchronization

/// An output's branch of a Replay's graph: `[gate →] decoder → pacer → sink`, how it is built, and
/// what its nodes read of the Replay on the executor.
extension Replay {
  /// One output's branch: `[gate →] decoder → pacer → sink`.
  struct Branch {
    let nodes: [any Node]
    let pacer: Pacer
    let isVideo: Bool
    /// An audio branch's role: the sound beside a picture (`true`: muted off 1×, handed ahead to a
    /// device that holds it, the play's clock following it if it is the candidate) or alone (pacing the
    /// play), set when a first
    /// picture joins a play of audio alone or the last one leaves, as if built so. Nil for video.
    var soundRole: ((_ besidePicture: Bool) -> Void)? = nil
  }

  /// How an output's branch starts: with the graph, or joining it while it runs.
  struct BranchStart {
    var speed: ReplaySpeed
    var paused: Bool
    /// Nothing earlier is presented (a branch that joins starts at its output's `joinsAt`).
    var presentFrom: MediaTime
    /// A picture that joins shows its `joinsAt` decoded from the history, not the next keyframe: it
    /// takes the position over from a driver that left (as one joining a paused play does).
    var showsPosition = false
    /// Outputs that go on from later than ``presentFrom`` (just after their own last frame).
    var resumesAfter: [OutputID: MediaTime] = [:]
    var showsFirstFrameWhilePaused: Bool
    /// What audio branches read per frame.
    let levels: Published<AudioLevels>
  }

  /// `[gate →] decoder → pacer → sink` for one output, hung on `graph`'s gap detector.
  func connectBranch(
    for binding: Binding, of graph: Graph, start: BranchStart, in pipeline: Pipeline
  ) throws -> Branch {
    let joints = graph.joints
    guard let history = joints.history else { throw TiError(.notBound, "a graph without outputs takes none") }
    let generation = graph.base
    let timeline = joints.timeline
    let id = binding.id
    let name = binding.isVideo ? "Video\(binding.channel)" : "Audio\(binding.channel)"
    // One thread: frame threads would hold back a frame each, and a seek's first picture, a step while
    // paused and the frame shown at a gap must come out with their own packet (ExoPlayer and ffplay
    // play with low-delay decoders for the same reason).
    let decoder = try FrameDecoder(name: "\(name)Decoder", track: binding.track, threads: 1)
    let joining = binding.joinsAt
    let presentFrom = joining ?? start.resumesAfter[id] ?? start.presentFrom
    let pacer: Pacer
    /// Shows or plays a frame the rules accepted; whether its sound steers the play's clock
    /// (``ReplayStateMachine/steeringSound(of:)``).
    let present: @Sendable (DecodedFrame, _ steersClock: Bool) -> Void
    /// What a flush of the branch does beside the Replay's rules (an audio device drops what it holds).
    var flushed: @Sendable () -> Void = {}
    var soundRole: ((Bool) -> Void)?
    switch binding.attachment.target {
    case .video(let renderer):
      // A seek while paused shows the target's frame (R35); a play never starts paused. The clock starts
      // with the picture: audio waits for the first frame of the video decoding from the keyframe
      // before the target (video missing holds it back up to the preroll limit). Audio does not preroll:
      // an audio track without media, or with a gap there, would hold the picture back as long. An
      // output that joins a running play holds back nothing.
      pacer = Pacer(
        name: "\(name)Pacer", rate: start.speed.rate, paused: start.paused, presentFrom: presentFrom,
        showsFirstFrameWhilePaused: start.showsFirstFrameWhilePaused,
        showsFirstFrameAfterSeek: true, timeline: timeline, prerolls: joining == nil, prerollsAfterSeek: true)
      present = { frame, _ in renderer.render(frame) }
    case .audio(let device):
      // With video, audio is muted and not presented off 1×; alone it paces the position.
      let audioOnly = !joints.hasVideo
      // With a picture to keep in step, a device that says how long it holds what it plays gets its
      // audio ahead by the lead, and the play's clock (a SlewedClock) follows what it actually plays: the
      // audio master clock. Alone, audio paces the position itself (a lead would put it ahead).
      let slewed = device.latency != nil ? environment.clock as? SlewedClock : nil
      let follows = FollowsClock(!audioOnly && slewed != nil)
      let lead = slewed == nil ? MediaDuration.zero : Pacer.audioLead
      let branchPacer = Pacer(
        name: "\(name)Pacer", rate: start.speed.rate, paused: start.paused, presentFrom: presentFrom,
        muted: !audioOnly, timeline: timeline, prerolls: false, lead: follows.value ? lead : .zero)
      pacer = branchPacer
      soundRole = { besidePicture in
        branchPacer.setRole(muted: besidePicture, lead: besidePicture ? lead : .zero)
        follows.value = besidePicture && slewed != nil
      }
      // Speed and volume as published: an audio frame takes no Replay lock.
      let levels = LevelsReader(start.levels)
      // On the executor, in order with the frames: nothing the device holds from before a seek is heard
      // after it (the seek's caller flushed it at once too; a frame may have been under way).
      flushed = { device.flush() }
      present = { frame, steersClock in
        let current = levels.current
        guard current.normalSpeed, let volume = current.volumes[id] else { return }
        guard let slewed, follows.value else { return device.play(frame, volume: volume) }
        // One sound steers the clock: the one the timeline follows, or the one heard in its stead when
        // that failed. Another channel's speaker steering it too pulled the picture off both.
        device.play(frame, volume: volume, in: timeline, following: slewed, steers: steersClock)
      }
    }
    let video = binding.isVideo
    let sink = PresentationSink(
      name: "\(name)Output",
      // The candidates as they are now (a driver that left handed its place on): read on the executor,
      // where `cut` changes them.
      onFrame: { [weak self, weak joints] frame, flushes in
        guard let self, let candidates = joints?.candidates else { return }
        let verdict = self.presented(
          frame, by: id, video: video, candidates: candidates, generation: generation + flushes)
        guard verdict.accepted else { return }
        if video { joints?.pictureCame(by: id) }
        present(frame, verdict.steersClock)
      },
      onEvent: { [weak self, weak joints] event, flushes in
        if case .gap(let gap) = event, gap.concerns(binding.track), let candidates = joints?.candidates {
          self?.crossed(gap, by: id, candidates: candidates, generation: generation + flushes)
        }
      },
      onEnd: { [weak self] flushes in self?.drained(id, generation: generation + flushes) }, onFlush: flushed)
    var nodes: [any Node] = [decoder, pacer, sink]
    if let joining {
      // Joining a paused play, the branch shows the position at once from what the graph read already;
      // a running one starts at the next keyframe (O18) read already, or at the position for audio
      // (each of its packets decodes alone: what the history kept from there on is what a new graph
      // would play).
      let showing = start.paused || start.showsPosition || !binding.isVideo
      let gate = KeyframeGate(
        name: "\(name)Gate", track: binding.track, opensAt: joining, history: history,
        start: showing ? .showing : .nextKeyframe)
      pipeline.connect(history, to: gate, limits: EdgeLimits(items: 64, bytes: 4 << 20))
      pipeline.connect(gate, to: decoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
      nodes.append(gate)
    } else {
      pipeline.connect(history, to: decoder, limits: EdgeLimits(items: 64, bytes: 4 << 20))
    }
    // Few decoded pictures wait for their instant: memory stays small at any speed.
    pipeline.connect(decoder, to: pacer, limits: EdgeLimits(items: binding.isVideo ? 1 : 16))
    pipeline.connect(pacer, to: sink, limits: EdgeLimits(items: binding.isVideo ? 2 : 4))
    return Branch(nodes: nodes, pacer: pacer, isVideo: binding.isVideo, soundRole: soundRole)
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

/// Whether an audio branch's device follows the play's `SlewedClock` (a picture paces the play): set
/// when a first picture joins a play of audio alone, cleared when the last one leaves a play with
/// sound, read per frame on the branch's executor.
final class FollowsClock: Sendable {
  private let flag: Atomic<Bool>

  init(_ value: Bool) { flag = Atomic(value) }

  var value: Bool {
    get { flag.load(ordering: .acquiring) }
    set { flag.store(newValue, ordering: .releasing) }
  }
}
