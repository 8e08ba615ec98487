import Foundation
import PipelineGraph

/// Switches between several inputs — cameras of one scene, a file and its replacement — at keyframes,
/// as GStreamer's `input-selector`: the packets of the active input go out as one track (and its audio as
/// one audio track), so a writer or a player downstream sees one continuous stream.
///
/// Inputs are fanned in (every source connected to the selector) and told apart by their tracks. A switch
/// is asked for with ``select(_:at:)``: it takes effect at the new input's first keyframe shown at or after
/// the given time, once the old input reached that keyframe's time — the old input's packets from then on
/// are dropped, the new input's before it too, and what the new input sends while the old one catches up
/// is held (both inputs' packets may arrive in any interleaving: the output is the same). The output's
/// format is announced by a `formatChange` at the switch.
///
/// What waits at a switch is bounded by ``holdLimit``: when the new input has no keyframe within it, the
/// old input's oldest held packets go out and the switch moves past them; when the old input lags behind
/// the new one by more than it, the switch goes ahead without waiting for the old input.
///
/// The old input's frames shown at or after the switch are dropped: with B-frames, the few before it that
/// refer to them cannot be decoded; switch inputs without B-frames (as cameras make them), or at a point
/// where the old input has a keyframe.
///
/// Confined to its pipeline's executor; ``select(_:at:)`` may be called from any thread.
public final class InputSelector: Node {
  /// Consumes the packets of every input.
  public typealias Input = EncodedPacket
  /// Emits the active input's packets on the output tracks.
  public typealias Output = EncodedPacket

  /// One input: its video track and, optionally, its audio track.
  public struct Choice: Sendable, Hashable {
    /// The input's video track.
    public var video: TrackID
    /// The input's audio track, if any.
    public var audio: TrackID?

    /// Creates a choice.
    public init(video: TrackID, audio: TrackID? = nil) {
      self.video = video
      self.audio = audio
    }
  }

  private struct Switch {
    var to: Int
    var at: MediaTime
  }

  /// The node's name.
  public let name = "InputSelector"
  /// The inputs.
  public let choices: [Choice]
  /// The video track the output carries.
  public let videoTrack: TrackID
  /// The audio track the output carries, if any.
  public let audioTrack: TrackID?
  /// The input now let through (confined to the executor).
  public private(set) var active: Int
  private let requested = NSLock()
  private var requestedSwitch: Switch?
  private var pending: Switch?
  /// The new input's packets, from its keyframe at the switch, while the old input catches up.
  private var incoming: [EncodedPacket] = []
  /// The old input reached the switch.
  private var oldReached = false
  /// The old input's packets past the time asked for, until the new input's keyframe is known.
  private var outgoing: [EncodedPacket] = []
  /// The first keyframe of the active input was let through.
  private var started = false
  /// The output's format is announced at the next keyframe (the first, and each switch's).
  private var announce = true
  /// The most media, and bytes, held on either side of a switch.
  public static let holdLimit = (span: MediaDuration.microseconds(10_000_000), bytes: 64 << 20)
  /// Bytes of `incoming` and `outgoing`.
  private var incomingBytes = 0
  private var outgoingBytes = 0
  /// Packets dropped (inactive inputs, before keyframes).
  public private(set) var droppedPackets = 0
  /// Switches made, with where they took effect.
  public private(set) var switches: [(input: Int, at: MediaTime)] = []

  /// A selector over `choices`, starting with `initial`, emitting on `videoTrack` (and `audioTrack`).
  public init(choices: [Choice], initial: Int = 0, videoTrack: TrackID, audioTrack: TrackID? = nil) {
    precondition(choices.indices.contains(initial), "the initial input is one of the choices")
    self.choices = choices
    active = initial
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
  }

  /// Asks to switch to input `index` at its first keyframe shown at or after `time` (from any thread;
  /// the latest request wins).
  public func select(_ index: Int, at time: MediaTime) {
    guard choices.indices.contains(index) else { return }
    requested.withLock { requestedSwitch = Switch(to: index, at: time) }
  }

  /// Lets a packet of the active input through, holds one of the input being switched to, drops the rest.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    if let asked = requested.withLock({ () -> Switch? in
      defer { requestedSwitch = nil }; return requestedSwitch
    }) {
      if asked.to != active { pending = asked } else { pending = nil }
      for packet in outgoing { emit(packet, context) }
      outgoing = []
      incoming = []
      (incomingBytes, outgoingBytes) = (0, 0)
      oldReached = false
    }
    let current = choices[active]
    if let pending, input.track == choices[pending.to].video || input.track == choices[pending.to].audio {
      return try hold(input, for: pending, context)
    }
    guard input.track == current.video || input.track == current.audio else { return droppedPackets += 1 }
    guard let pending, input.time >= pending.at else { return emit(input, context) }
    // Past the time asked for: held until the new input's keyframe says where the switch is.
    guard let keyframe = incoming.first?.time else {
      outgoing.append(input)
      outgoingBytes += input.data.count
      return releaseOutgoingBeyondLimit(context)
    }
    try leave(input, before: keyframe, context)
  }

  /// The new input has no keyframe within the limit: the old input's oldest held packets go out, and the
  /// switch can only come after them.
  private func releaseOutgoingBeyondLimit(_ context: NodeContext<EncodedPacket>) {
    var released = 0
    while released < outgoing.count, exceedsLimit(outgoing[released...], bytes: outgoingBytes) {
      let packet = outgoing[released]
      emit(packet, context)
      outgoingBytes -= packet.data.count
      let end = packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
      if let at = pending?.at { pending?.at = max(at, end) }
      released += 1
    }
    outgoing.removeFirst(released)
  }

  private func exceedsLimit(_ packets: ArraySlice<EncodedPacket>, bytes: Int) -> Bool {
    guard let first = packets.first, let last = packets.last else { return false }
    return bytes > Self.holdLimit.bytes || (try? last.time - first.time).map { $0 > Self.holdLimit.span } ?? true
  }

  /// The old input's packet once the switch's keyframe is known: before it, let through; at or after it,
  /// dropped (and the old input has reached the switch).
  private func leave(_ packet: EncodedPacket, before keyframe: MediaTime, _ context: NodeContext<EncodedPacket>) throws
  {
    guard packet.time >= keyframe else { return emit(packet, context) }
    droppedPackets += 1
    if packet.track == choices[active].video {
      oldReached = true
      try switchIfReady(context)
    }
  }

  private func hold(_ packet: EncodedPacket, for pending: Switch, _ context: NodeContext<EncodedPacket>) throws {
    let choice = choices[pending.to]
    if incoming.isEmpty {
      // From the new input's first keyframe shown at or after the switch.
      guard packet.track == choice.video, packet.isKeyframe, packet.time >= pending.at else {
        return droppedPackets += 1
      }
      self.pending?.at = packet.time
      incoming.append(packet)
      incomingBytes += packet.data.count
      let waiting = outgoing
      outgoing = []
      outgoingBytes = 0
      for old in waiting { try leave(old, before: packet.time, context) }
      return try switchIfReady(context)
    } else if packet.track == choice.audio, let first = incoming.first, packet.time < first.time {
      return droppedPackets += 1
    }
    incoming.append(packet)
    incomingBytes += packet.data.count
    // The old input lags by more than the limit: the switch goes ahead without it.
    if exceedsLimit(incoming[...], bytes: incomingBytes) { oldReached = true }
    try switchIfReady(context)
  }

  private func switchIfReady(_ context: NodeContext<EncodedPacket>) throws {
    guard let pending, oldReached, let first = incoming.first else { return }
    active = pending.to
    self.pending = nil
    oldReached = false
    switches.append((pending.to, first.time))
    announce = true
    let held = incoming
    incoming = []
    incomingBytes = 0
    for packet in held { emit(packet, context) }
  }

  private func emit(_ packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    let isVideo = packet.track == choices[active].video
    guard let track = isVideo ? videoTrack : audioTrack else { return droppedPackets += 1 }
    if isVideo && !started {
      guard packet.isKeyframe else { return droppedPackets += 1 }
      started = true
    }
    if isVideo && packet.isKeyframe && announce {
      announce = false
      context.send(.formatChange(FormatChange(track: track, format: packet.format, time: packet.time)))
    }
    context.emit(
      EncodedPacket(
        track: track, format: packet.format, time: packet.time, decodeTime: packet.decodeTime,
        duration: packet.duration, isKeyframe: packet.isKeyframe, data: packet.data, isHidden: packet.isHidden,
        hiddenSamples: packet.hiddenSamples))
  }

  /// Events of the active input pass (its gaps and formats on the output tracks); the others' are dropped.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    switch try MediaEvent(event) {
    case .formatChange:
      return  // announced at the keyframes the output starts with
    case .gap(let gap):
      let current = choices[active]
      guard gap.concerns(current.video) || current.audio.map(gap.concerns) == true else { return }
      var relabelled = gap
      relabelled.tracks = gap.tracks.compactMap { track in
        track == current.video ? videoTrack : track == current.audio ? audioTrack : nil
      }
      context.send(.gap(relabelled))
    default:
      context.send(event)
    }
  }

  /// The stream ended: a switch still waiting for the old input happens now.
  public func finish(context: NodeContext<EncodedPacket>) throws {
    let waiting = outgoing
    outgoing = []
    outgoingBytes = 0
    if let keyframe = incoming.first?.time {
      for packet in waiting { try leave(packet, before: keyframe, context) }
    } else {
      for packet in waiting { emit(packet, context) }
    }
    oldReached = true
    try switchIfReady(context)
  }
}
