import PipelineGraph

/// Lets packets through where decisions taken downstream on decoded pictures say so: the one-pass form
/// of "find the interesting seconds on the pictures, keep those seconds of the stream".
///
/// The graph fans the packets out: one branch decodes them and a node of one's own judges the pictures,
/// handing its verdicts to a ``ValveDecisions``; the other branch goes through the valve. The valve holds
/// packets until their time is decided, then keeps the decided stretches as a ``RangeGate`` does — video
/// from the keyframe at or before each stretch's start, audio with it, a `gap` fact (`noRecording`)
/// stated for what it drops between stretches, so a ``GapDetector`` and an ``Exporter`` downstream cut
/// the file there.
///
/// The look-ahead bounds how far the decisions may lag: a packet still undecided when the newest one
/// is ``lookAhead`` later fails the node (`invalidArgument`: the decider does not keep up; give the
/// deciding branch's edges less room than the look-ahead). At its end of stream the valve waits for
/// ``ValveDecisions/finish()``.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class Valve: Node {
  /// Consumes packets in decode order.
  public typealias Input = EncodedPacket
  /// Emits the kept packets.
  public typealias Output = EncodedPacket

  private enum Held {
    case packet(EncodedPacket)
    case event(PipelineEvent)
  }

  /// The node's name.
  public let name = "Valve"
  /// Where the decisions come from.
  public let decisions: ValveDecisions
  /// The most a packet waits for its decision, in media time.
  public let lookAhead: MediaDuration
  private let gate: RangeGate
  private var held: [Held] = []
  private var headIndex = 0
  private var endPending = false
  private var knownRanges = 0

  /// A valve on `videoTrack` (and `audioTrack` with it), deciding by `decisions`.
  public init(
    decisions: ValveDecisions, videoTrack: TrackID, audioTrack: TrackID? = nil,
    lookAhead: MediaDuration = .microseconds(10_000_000)
  ) {
    self.decisions = decisions
    self.lookAhead = lookAhead
    gate = RangeGate(keeping: [], videoTrack: videoTrack, audioTrack: audioTrack)
    gate.expectMoreRanges()
  }

  /// Each stretch is sent from its own keyframe even when the last one ended in the same group of
  /// pictures, for an ``ExactCut`` that cuts each exactly (an export with `cut: .exact` sets it); otherwise
  /// such stretches join, as a keyframe cut must.
  public var cutsExactly: Bool {
    get { gate.resendsGroups }
    set { gate.resendsGroups = newValue }
  }

  /// The kept stretches as far as decided.
  public var ranges: [MediaRange] { gate.ranges }
  /// Packets dropped (outside every kept stretch).
  public var droppedPackets: Int { gate.droppedPackets }

  /// Listens to the decisions (each wakes the valve on its executor).
  public func start(context: NodeContext<EncodedPacket>) throws { listen(context) }

  private func listen(_ context: NodeContext<EncodedPacket>) {
    // Made again at each flush: a wake-up belongs to one flush generation.
    let wake = context.makeCompletion { [unowned self] (_: Bool) in
      do { try drain(context) } catch { context.fail(error) }
    }
    decisions.listen { wake(true) }
  }

  /// Stops listening: the decisions no longer hold the pipeline.
  public func stop(context: NodeContext<EncodedPacket>) { decisions.stopListening() }

  /// Holds a packet until its time is decided.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    held.append(.packet(input))
    try drain(context)
    if let oldest = firstHeldPacket, let waited = try? input.time - oldest.time, waited > lookAhead {
      throw MediaError(
        .invalidArgument,
        "no decision for \(oldest.track) at \(oldest.time) within the look-ahead of \(lookAhead): the deciding branch falls behind"
      )
    }
  }

  private var firstHeldPacket: EncodedPacket? {
    for item in held[headIndex...] {
      if case .packet(let packet) = item { return packet }
    }
    return nil
  }

  /// Events keep their place among held packets.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    held.append(.event(event))
    try drain(context)
  }

  /// Sends what is decided through the gate.
  private func drain(_ context: NodeContext<EncodedPacket>) throws {
    let state = decisions.state
    // New ranges, and the last known one again: it may have grown since (adding merges).
    for range in state.kept.dropFirst(max(0, knownRanges - 1)) { gate.add(range) }
    knownRanges = state.kept.count
    if state.finished { gate.endRanges() }
    while headIndex < held.count {
      switch held[headIndex] {
      case .event(let event):
        try gate.handle(event, context: context)
      case .packet(let packet):
        guard state.finished || state.through.map({ packet.time < $0 }) == true else { return compact() }
        try gate.process(packet, context: context)
      }
      headIndex += 1
    }
    compact()
    if endPending && state.finished {
      endPending = false
      context.releaseEndOfStream()
    }
  }

  private func compact() {
    guard headIndex > 0, headIndex * 2 >= held.count else { return }
    held.removeFirst(headIndex)
    headIndex = 0
  }

  /// Waits for the last decisions before the end of stream goes on.
  public func finish(context: NodeContext<EncodedPacket>) throws {
    if decisions.state.finished {
      try drain(context)
    } else {
      endPending = true
      context.holdEndOfStream()
    }
  }

  /// Forgets what is held (decisions are the decider's: a new pass needs new ones).
  public func flush(context: NodeContext<EncodedPacket>) {
    held.removeAll()
    headIndex = 0
    endPending = false
    gate.flush(context: context)
    listen(context)
  }
}
