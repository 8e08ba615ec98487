import PipelineGraph

/// Lets one track's packets through from its first independently decodable packet at or after a time:
/// an output that joins a running replay starts at the next keyframe and never gets earlier media
/// (audio packets each decode alone). Packets of other tracks and events pass unchanged.
///
/// Given a ``PacketHistory`` (the node it hangs on), the gate instead starts with what the history kept
/// of its track from the last decodable packet at or before that time (``HistoryStart/showing``), or
/// from the first at or after it (``HistoryStart/nextKeyframe``), handed on before anything that comes
/// next: an output joining a paused replay shows the picture at the position at once, decoded from
/// media read already, an audio output joining a running one plays from the position, and a video one
/// starts at the next keyframe read already (not at one read seconds later). When the history does not
/// hold it, the gate waits for the next keyframe.
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

  /// True while the history's packets are being handed on.
  public var hasPendingWork: Bool { caughtUp < backlog.count }

  /// Hands on the history's next packet.
  public func step(context: NodeContext<EncodedPacket>) throws {
    context.emit(backlog[caughtUp])
    caughtUp += 1
    if caughtUp == backlog.count {
      backlog = []
      caughtUp = 0
    }
  }

  /// Drops the track's packets until the gate opens.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track else { return context.emit(input) }
    if open { return context.emit(input) }
    guard threshold.map({ input.time >= $0 }) ?? true, input.isKeyframe || input.track.kind == .audio else { return }
    open = true
    context.emit(input)
  }

  /// A flush closes the gate again; a seek's opens it at the next keyframe.
  public func flush(context: NodeContext<EncodedPacket>) {
    open = false
    backlog = []
    caughtUp = 0
    threshold = context.seekTarget == nil ? opensAt : nil
  }
}
