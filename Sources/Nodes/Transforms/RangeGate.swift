import PipelineGraph

/// Keeps the stretches of a stream of packets (in decode order) that a flow asks for, each as a player
/// or a file needs it, and drops the rest: the packets of a media file outside an export's range, the
/// seconds a detector did not flag.
///
/// For each kept range `[start, end)`:
/// - video passes from the keyframe at or before `start` (the first keyframe after it when there is
///   none before): the frames of that group of pictures are held until a frame shown at or after
///   `start` arrives, and dropped when a later keyframe still before `start` arrives;
/// - audio passes from that keyframe's time (with the frame that straddles it), so sound and picture
///   start together;
/// - video passes until a frame *decoded* at or after `end` that is shown after every frame passed (every
///   later frame is shown after it): a frame shown after `end` but decoded before frames inside the range
///   passes, for it is their reference (B-frames), and so do the frames shown between — so a stretch may end a few pictures after `end` (at most the reordering depth), as it
///   may begin a group of pictures before `start`; an ``Exporter`` whose range ends at `end` hides them;
///   audio passes while it starts before `end`.
///
/// Each stretch is announced by a ``StretchStart`` event (where it was asked to start) before its first
/// packet, for an ``ExactCut`` downstream. Between two kept ranges the gate states what it dropped: a `gap` event of the gated tracks, reason
/// `noRecording` (nothing was asked for there), from the end of one range to where the next begins,
/// sent just before the next range's first packet. A ``GapDetector`` downstream turns it into the
/// stream's gap and an ``Exporter`` cuts the file there. Before the first range and after the last,
/// nothing is stated: that is outside what the flow asked for. Packets of other tracks pass unchanged.
///
/// Confined to its pipeline's executor; a flush starts again at the first range.
public final class RangeGate: Node {
  /// Consumes packets in decode order.
  public typealias Input = EncodedPacket
  /// Emits the packets of the kept ranges.
  public typealias Output = EncodedPacket

  private enum Held {
    case packet(EncodedPacket)
    case event(PipelineEvent)
  }

  private enum Phase {
    /// Before range `index`: holding its first group of pictures.
    case waiting(index: Int)
    /// Inside range `index` (its video began at `videoStart`).
    case passing(index: Int, videoStart: MediaTime)
    /// After the last range.
    case done
  }

  /// The node's name.
  public let name = "RangeGate"
  /// The kept ranges, sorted and merged (a ``Valve``'s grow as its decisions come).
  public private(set) var ranges: [MediaRange]
  /// More ranges may come (``add(_:)``): after the last known one, the gate waits instead of closing.
  private var expectsMore = false
  /// The video track the ranges follow.
  public let videoTrack: TrackID
  /// The audio track kept with it, if any.
  public let audioTrack: TrackID?
  private var phase: Phase
  private var held: [Held] = []
  /// The range just left, while its audio may still come (audio trails video in the file's order).
  private var closing: MediaRange?
  /// The latest presentation time of the video passed in the current range.
  private var latestShown = MediaTime(microseconds: .min)
  /// The packets passed since the last video keyframe (the group a next stretch may begin in).
  private var sinceKeyframe: [EncodedPacket] = []
  /// How many of the held packets, at their front, were sent with the last stretch.
  private var alreadySent = 0
  /// Each stretch is sent from its own keyframe, even when the last one ended in the same group of
  /// pictures (for an ``ExactCut`` downstream, which cuts each where it was asked); otherwise such
  /// stretches join, as a keyframe cut must.
  var resendsGroups = false
  /// Where the video passed in the current range ends (audio goes as far).
  private var shownEnd = MediaTime(microseconds: .min)
  /// Audio held while no video leads into the next range: at most this much (10 s).
  static let maximumHeldAudio = MediaDuration.microseconds(10_000_000)
  /// Packets dropped (outside every range).
  public private(set) var droppedPackets = 0

  /// A gate keeping `ranges` of `videoTrack` (and of `audioTrack` with it).
  public init(keeping ranges: [MediaRange], videoTrack: TrackID, audioTrack: TrackID? = nil) {
    var merged: [MediaRange] = []
    for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.start < $1.start }) {
      if let last = merged.last, range.start <= last.end {
        merged[merged.count - 1] = MediaRange(start: last.start, end: max(last.end, range.end))
      } else {
        merged.append(range)
      }
    }
    self.ranges = merged
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    phase = merged.isEmpty ? .done : .waiting(index: 0)
  }

  /// Passes, holds or drops a packet.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    if input.track == videoTrack {
      video(input, context)
    } else if input.track == audioTrack {
      audio(input, context)
    } else {
      context.emit(input)
    }
  }

  private func video(_ packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    switch phase {
    case .done:
      droppedPackets += 1
    case .passing(let index, let videoStart):
      let range = ranges[index]
      // Until a frame decoded at or after the end that is shown after every frame passed: one shown
      // before them fills the stretch (B-frames between a reference after the end and the frames before).
      guard packet.decodeTime >= range.end && packet.time >= latestShown else {
        latestShown = max(latestShown, packet.time)
        shownEnd = max(shownEnd, packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max)))
        // Kept only when more ranges may follow (a Valve's): a single range never needs it again.
        if expectsMore {
          if packet.isKeyframe { sinceKeyframe = [] }
          sinceKeyframe.append(packet)
        }
        return context.emit(packet)
      }
      closing = MediaRange(start: videoStart, end: max(range.end, shownEnd))
      phase = index + 1 < ranges.count || expectsMore ? .waiting(index: index + 1) : .done
      // The group of pictures the stretch ended in may lead into the next one: held again, as sent.
      if case .waiting = phase, !sinceKeyframe.isEmpty {
        held = sinceKeyframe.map { .packet($0) }
        alreadySent = held.count
      }
      sinceKeyframe = []
      video(packet, context)
    case .waiting(let index):
      guard index < ranges.count else {
        // The next range is not known yet: hold the group of pictures that may lead into it.
        if packet.isKeyframe {
          dropHeldPackets(keepingSoundFrom: packet.time)
        } else if firstHeldVideo == nil {
          return droppedPackets += 1
        }
        return held.append(.packet(packet))
      }
      let range = ranges[index]
      if packet.isKeyframe && packet.time <= range.start {
        // A later group of pictures still leads into the range: the one held is not needed.
        dropHeldPackets(keepingSoundFrom: packet.time)
      }
      let keyframe = firstHeldVideo?.time
      if keyframe == nil && !packet.isKeyframe {
        // Nothing can be decoded before a keyframe.
        droppedPackets += 1
        return
      }
      held.append(.packet(packet))
      // The frame shown at the start (or one after it) is in: the group leads into the range.
      if packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max)) > range.start {
        release(index: index, context)
      }
    }
  }

  private var firstHeldVideo: EncodedPacket? {
    for item in held {
      if case .packet(let packet) = item, packet.track == videoTrack { return packet }
    }
    return nil
  }

  private func audio(_ packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    if let closing, packet.time < closing.end {
      if Self.reaches(packet, closing.start) { context.emit(packet) } else { droppedPackets += 1 }
      return
    }
    switch phase {
    case .done: droppedPackets += 1
    case .passing(let index, let videoStart):
      if packet.time < max(ranges[index].end, shownEnd) && Self.reaches(packet, videoStart) {
        context.emit(packet)
      } else {
        droppedPackets += 1
      }
    case .waiting(let index) where index >= ranges.count && firstHeldVideo == nil:
      // No range known and no group of pictures held: nothing can lead into a range from here.
      droppedPackets += 1
    case .waiting:
      // Held with the group of pictures that may lead into the range; without one, a bounded stretch.
      if let keyframe = firstHeldVideo, !Self.reaches(packet, keyframe.time) { return droppedPackets += 1 }
      let oldest = (try? packet.time - Self.maximumHeldAudio) ?? packet.time
      let before = held.count
      held.removeAll {
        if case .packet(let earlier) = $0 { earlier.track != videoTrack && earlier.time < oldest } else { false }
      }
      droppedPackets += before - held.count
      held.append(.packet(packet))
    }
  }

  /// The held group of pictures begins range `index`: its video from the keyframe, audio from then.
  private func release(index: Int, _ context: NodeContext<EncodedPacket>) {
    let items = held
    held = []
    guard
      let start = items.lazy.compactMap({ item -> MediaTime? in
        if case .packet(let packet) = item, packet.track == self.videoTrack { return packet.time }
        return nil
      }).first
    else { return }
    let sent = alreadySent
    alreadySent = 0
    let requested = max(start, ranges[index].start)
    if sent > 0, let closing, !resendsGroups || requested <= closing.end {
      // The range begins in the group of pictures the last stretch ended in: the stretch goes on (a keyframe
      // cut begins where decoding can; an exact one too when the range begins before the stretch ended),
      // with what was not sent yet.
      self.closing = nil
      phase = .passing(index: index, videoStart: closing.start)
      for item in items.dropFirst(sent) { forward(item, from: closing.start, context) }
      return
    }
    if let closing, closing.end < requested {
      let tracks = [videoTrack] + (audioTrack.map { [$0] } ?? [])
      let gapEnd = sent > 0 ? requested : start
      context.send(
        .gap(RecordingGap(range: MediaRange(start: closing.end, end: gapEnd), tracks: tracks, reasons: [.noRecording])))
    }
    closing = nil
    context.send(.custom(StretchStart(track: videoTrack, time: requested)))
    latestShown = start
    shownEnd = start
    phase = .passing(index: index, videoStart: start)
    for item in items { forward(item, from: start, context) }
  }

  private func forward(_ item: Held, from start: MediaTime, _ context: NodeContext<EncodedPacket>) {
    switch item {
    case .event(let event): context.send(event)
    case .packet(let packet):
      if packet.track == videoTrack {
        latestShown = max(latestShown, packet.time)
        shownEnd = max(shownEnd, packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max)))
        if expectsMore {
          if packet.isKeyframe { sinceKeyframe = [] }
          sinceKeyframe.append(packet)
        }
        context.emit(packet)
      } else if Self.reaches(packet, start) {
        context.emit(packet)
      } else {
        droppedPackets += 1
      }
    }
  }

  /// Drops the packets held; with `keyframe`, the time of a group of pictures that now leads in, the
  /// sound held that reaches it stays (in a file, sound that starts with the picture often comes first).
  private func dropHeldPackets(keepingSoundFrom keyframe: MediaTime? = nil) {
    var kept: [Held] = []
    for (position, item) in held.enumerated() {
      guard case .packet(let packet) = item else {
        kept.append(item)
        continue
      }
      if position >= alreadySent, packet.track != videoTrack, let keyframe, Self.reaches(packet, keyframe) {
        kept.append(item)
      } else if position >= alreadySent {
        droppedPackets += 1
      }
    }
    held = kept
    alreadySent = 0
  }

  /// Makes the gate wait for ranges still to come (``add(_:)``) instead of closing after the last one.
  func expectMoreRanges() {
    expectsMore = true
    if case .done = phase { phase = .waiting(index: ranges.count) }
  }

  /// Appends a range to keep, after (or overlapping the end of) the last one; no more are expected
  /// once `final` is set.
  func add(_ range: MediaRange) {
    guard !range.isEmpty else { return }
    if let last = ranges.last, range.start <= last.end {
      ranges[ranges.count - 1] = MediaRange(start: last.start, end: max(last.end, range.end))
    } else if ranges.last.map({ range.start > $0.start }) ?? true {
      ranges.append(range)
    }
  }

  /// No more ranges come.
  func endRanges() {
    expectsMore = false
    if case .waiting(let index) = phase, index >= ranges.count {
      phase = .done
      dropHeldPackets()
    }
  }

  /// Events keep their place among held packets.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .waiting = phase, !held.isEmpty { return held.append(.event(event)) }
    context.send(event)
  }

  /// Whether an audio frame sounds at or after `time` (one that straddles the video's start is the
  /// audio's lead-in: a file hides its first part, a player needs it to start without a fade-in).
  private static func reaches(_ packet: EncodedPacket, _ time: MediaTime) -> Bool {
    packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max)) > time
  }

  /// Starts again at the first range.
  public func flush(context: NodeContext<EncodedPacket>) {
    held.removeAll()
    sinceKeyframe.removeAll()
    alreadySent = 0
    closing = nil
    phase = ranges.isEmpty && !expectsMore ? .done : .waiting(index: 0)
  }
}
