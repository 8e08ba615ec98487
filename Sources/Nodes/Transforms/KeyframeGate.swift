import PipelineGraph

/// Lets one track's packets through from its first independently decodable packet at or after a time:
/// an output that joins a running replay starts at the next keyframe and never gets earlier media
/// (audio packets each decode alone). Packets of other tracks and events pass unchanged (but the copy
/// of a gap handed on already, below).
///
/// Given a ``PacketHistory`` (the node it hangs on), the gate instead starts with what the history kept
/// of its track from the last decodable packet at or before that time (``HistoryStart/showing``), or
/// from the first at or after it (``HistoryStart/nextKeyframe``), handed on before anything that comes
/// next: an output joining a paused replay shows the picture at the position at once, decoded from
/// media read already, an audio output joining a running one plays from the position, and a video one
/// starts at the next keyframe read already (not at one read seconds later). When the history does not
/// hold it, the gate waits for the next keyframe.
///
/// Gaps of the track found late (``GapDetector/announceMissing(of:from:)``: among what passed before the
/// track was judged) are handed on in order, before the first packet of the track at or after each
/// gap's end (``handOn(_:)``), as a graph that judged the track all along sends them; the copy the
/// detector sends behind what was read ahead is dropped.
///
/// States: closed → open (at the first packet that qualifies), or catching up (handing on what the
/// history kept, one packet per step) → open; a flush closes it again (what was left of the history
/// is dropped), and after a seek's flush (`NodeContext/seekTarget`) it opens at the track's first
/// keyframe, whatever its time: the seek starts every branch afresh from the keyframe at or before the
/// target. Confined to its pipeline's executor.
public final class KeyframeGate: SteppingNode {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits the packets let through.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The gated track.
  public let track: TrackID
  /// Nothing of the track earlier than this passes (unless the history shows this time).
  public let opensAt: MediaTime
  private let history: PacketHistory?
  private let historyStart: HistoryStart

  /// Where in a ``PacketHistory`` a gate starts.
  public enum HistoryStart: Sendable {
    /// At the last decodable packet at or before the gate's time: the time is shown.
    case showing
    /// At the first decodable packet at or after it: the next keyframe.
    case nextKeyframe
  }
  /// Nothing earlier passes in the current flush generation (nil after a seek).
  private var threshold: MediaTime?
  private var open = false
  /// What the history kept, still to hand on (from `caughtUp` on).
  private var backlog: [EncodedPacket] = []
  private var caughtUp = 0
  /// Gaps found late, in order, not handed on yet.
  private var lateGaps: [RecordingGap] = []
  /// Those handed on whose copy from upstream has not come yet.
  private var handedOn: [RecordingGap] = []

  /// A gate on `track` that opens at its first keyframe not earlier than `opensAt`, or at once with
  /// what `history` kept from `start` (read when the gate starts).
  public init(
    name: String = "KeyframeGate", track: TrackID, opensAt: MediaTime, history: PacketHistory? = nil,
    start: HistoryStart = .showing
  ) {
    self.name = name
    self.track = track
    self.opensAt = opensAt
    self.history = history
    historyStart = start
    threshold = opensAt
  }

  /// Takes what the history kept from where it starts, if it holds it.
  public func start(context: NodeContext<EncodedPacket>) throws {
    let generation = context.generation
    let kept =
      switch historyStart {
      case .showing: history?.packets(of: track, decodableAt: opensAt, generation: generation)
      case .nextKeyframe: history?.packets(of: track, decodableFrom: opensAt, generation: generation)
      }
    guard let kept else { return }
    backlog = kept
    open = true
  }

  /// Gaps of the track found late (in order): each is sent before the first packet of the track at or
  /// after its end, once. On the pipeline's executor, before the gate's first packet.
  public func handOn(_ gaps: [RecordingGap]) {
    lateGaps += gaps.filter { $0.concerns(track) }
  }

  /// True while the history's packets are being handed on.
  public var hasPendingWork: Bool { caughtUp < backlog.count }

  /// Hands on the history's next packet.
  public func step(context: NodeContext<EncodedPacket>) throws {
    let packet = backlog[caughtUp]
    if !lateGaps.isEmpty { sendLateGaps(before: packet, context) }
    context.emit(packet)
    caughtUp += 1
    if caughtUp == backlog.count {
      backlog = []
      caughtUp = 0
    }
  }

  /// Drops the track's packets until the gate opens.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track else { return context.emit(input) }
    if open {
      if !lateGaps.isEmpty { sendLateGaps(before: input, context) }
      return context.emit(input)
    }
    guard threshold.map({ input.time >= $0 }) ?? true, input.isKeyframe || input.track.kind == .audio else { return }
    open = true
    if !lateGaps.isEmpty { sendLateGaps(before: input, context) }
    context.emit(input)
  }

  /// Passes events on; a late gap's copy from upstream is dropped when it was handed on already, and
  /// sent at once when it comes first (it is in order then).
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .gap(let payload) = event, let gap = payload as? RecordingGap {
      if let index = handedOn.firstIndex(of: gap) {
        handedOn.remove(at: index)
        return
      }
      lateGaps.removeAll { $0 == gap }
    }
    context.send(event)
  }

  /// Sends the late gaps that end at or before `packet` (of the gated track).
  private func sendLateGaps(before packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    // By presentation time: the detector's hole ends where the packet after it is presented.
    while let gap = lateGaps.first, packet.time >= gap.range.end {
      lateGaps.removeFirst()
      handedOn.append(gap)
      context.send(.gap(gap))
    }
  }

  /// A flush closes the gate again; a seek's opens it at the next keyframe. Gaps found late belong to
  /// what was flushed.
  public func flush(context: NodeContext<EncodedPacket>) {
    open = false
    backlog = []
    caughtUp = 0
    lateGaps = []
    handedOn = []
    threshold = context.seekTarget == nil ? opensAt : nil
  }
}
