import PipelineGraph

/// Turns what the graph states about missing media into the seed's gap events: once per stretch, per
/// track, in order with the media (a track's gap is sent just before that track's first packet after
/// it, or at the end), with every reason that applies.
///
/// Sources and transforms state facts; this node alone decides what is a gap:
/// - a listed range without an object (the source's `noRecording` gap), an object that failed (the
///   verifier's gap with its reason), frames that cannot be decoded until a keyframe (the demuxer's
///   `noKeyFrame` gap), audio that cannot be decoded (the transcoder's `mediaUnreadable` gap) — each
///   upstream `gap` event is a fact, consumed here;
/// - a stretch of the requested range without packets of a track is a gap of that track, whatever the
///   cause: its reasons are the facts that overlap it, and where none does, `trackUnavailable` where
///   objects were read (`objectStart` events) and `noRecording` where none was. So an object without
///   video of the requested channel is a video gap: the frame before it lasts until the object starts,
///   not over it.
/// - a video frame lasts until the next one (the demuxer's look-ahead, at most
///   ``SegmentDemuxer/maximumFrameDuration``); audio may be silent for up to ``audioTolerance``
///   without a gap (encoder padding, millisecond record times);
/// - video continuity is judged in decode order (``EncodedPacket/decodeTime``): packets of a stream with
///   B-frames arrive in decode order and their presentation times go back and forth, so a frame
///   follows when it is decoded where the previous one ends; the gap's range is in presentation time,
///   from the end of the latest frame shown to the keyframe after the hole. A frame shown after the
///   range's end but decoded before frames inside it passes (B-frames need it).
///
/// Video frames are dropped until the first keyframe and after any video gap until the next one
/// (`noKeyFrame` when nothing else explains them): nothing before a keyframe can be decoded. For media
/// that goes to one file (``Configuration/writesFile``), video must also keep the format of the first
/// keyframe (codec and picture size) and audio must be AAC in the format of the first packet; other
/// media is dropped and its stretch is a gap `unsupportedMedia`.
///
/// Packets of other tracks pass unchanged; `objectStart` and `formatChange` events pass on.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle (read ``gaps`` there, or once the
/// pipeline is idle); a flush restarts the accounting at the range's start (or a seek's target,
/// `NodeContext/seekTarget`, to the range's end), and ``gaps`` keeps what was sent.
public final class GapDetector: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits packets, and gap events before them.
  public typealias Output = EncodedPacket

  /// What to watch.
  public struct Configuration: Sendable {
    /// The requested range: gaps are reported inside it.
    public var range: MediaRange
    /// The video track, if any (an audio-only replay has none).
    public var videoTrack: TrackID?
    /// The audio track, if any.
    public var audioTrack: TrackID?
    /// The media goes to one file: one video format, one AAC audio format, stretches that start at
    /// keyframes.
    public var writesFile: Bool

    /// Creates a configuration.
    public init(range: MediaRange, videoTrack: TrackID?, audioTrack: TrackID?, writesFile: Bool = false) {
      self.range = range
      self.videoTrack = videoTrack
      self.audioTrack = audioTrack
      self.writesFile = writesFile
    }
  }

  /// The longest audio silence that is not a gap (200 ms).
  public static let audioTolerance = MediaDuration.microseconds(200_000)
  /// Video record times are whole milliseconds: a frame that starts within 1 ms of the previous one's
  /// end follows it.
  static let videoTolerance = MediaDuration.microseconds(1_000)

  private struct Fact {
    var range: MediaRange
    var tracks: [TrackID]
    var reasons: [GapReason]
    /// Tracks whose media came inside the range after all (the index listed the object twice and the
    /// other copy was good): the fact no longer says anything of them.
    var refuted: Set<TrackID> = []

    func concerns(_ track: TrackID) -> Bool {
      (tracks.isEmpty || tracks.contains(track)) && !refuted.contains(track)
    }
  }

  /// What is known of one track.
  private struct Account {
    let track: TrackID
    /// Everything before this is either media passed on or a gap sent.
    var through: MediaTime
    var format: TrackFormat?
    /// Where the next video frame is decoded: the end, in decode order, of the last frame seen (nil
    /// before the first).
    var decodedThrough: MediaTime?
    var needsKeyframe: Bool
    /// Packets dropped since then, and why (a fact once the run ends).
    var dropped: (since: MediaTime, reasons: [GapReason])?
    /// Facts of this track before this were sent (as part of a gap).
    var factsSent: MediaTime
  }

  /// The node's name.
  public let name = "GapDetector"
  /// The configuration; after a seek its range starts at the target.
  public private(set) var configuration: Configuration
  private let requestedRange: MediaRange
  private var video: Account?
  private var audio: Account?
  /// The objects read, by start (not merged: an object's own bounds tell where a track is missing).
  private var objects: [MediaRange] = []
  private var facts: [Fact] = []
  /// How far upstream has stated what there is (objects read, facts): at the end of the stream, what
  /// lies after is not a gap but was never scanned (a source that failed).
  private var horizon: MediaTime
  /// The gaps sent, in order (for statistics and tests).
  public private(set) var gaps: [RecordingGap] = []
  /// Where the current flush generation's gaps start in ``gaps``.
  private var generationStart = 0
  /// The tracks whose packets passed unaccounted for, in this flush generation: a track followed late
  /// (``follow(audio:)``, ``follow(video:)``) is accounted for from where they end, judged before by the
  /// stretches missing among them (``missing(of:from:)``). One entry a track: one hash lookup per such
  /// packet.
  private var unaccounted: [TrackID: Unaccounted] = [:]
  /// Gaps of a track followed late, found among what passed before (``announceMissing(of:from:)``): sent
  /// before the next packet or event.
  private var announced: [RecordingGap] = []

  /// What passed of one track unaccounted for.
  private struct Unaccounted {
    /// Where its first packet started (the earliest time, when it was accounted for before: nothing is
    /// known missing before what passed after).
    var first: MediaTime
    /// Where what passed ends.
    var passed: MediaTime
    /// Where the next packet is decoded (what passed ends in decode order; video is judged so).
    var decodedThrough: MediaTime
    /// The stretches missing among what passed (by this node's rules: longer than the kind's tolerance,
    /// a picture's judged in decode order), in order: those that end within
    /// ``GapDetector/keptMissingSpan`` of the last packet.
    var missing: [MediaRange] = []
    /// Video after a hole, or at the start: pictures before the next keyframe do not decode and count as
    /// missing (as a followed track drops them).
    var awaitsKeyframe = false

    /// `packet`, ending at `end` (and at `decodeEnd` in decode order), passed.
    mutating func pass(_ packet: EncodedPacket, end: MediaTime, decodeEnd: MediaTime) {
      let video = packet.track.kind == .video
      let tolerance = video ? GapDetector.videoTolerance : GapDetector.audioTolerance
      let hole = packet.decodeTime > ((try? decodedThrough + tolerance) ?? packet.decodeTime)
      // Not followed: the stretch missing runs on to the keyframe, where it is noted.
      if video && (awaitsKeyframe || hole) && !packet.isKeyframe {
        awaitsKeyframe = true
        return
      }
      awaitsKeyframe = false
      if hole, packet.time > passed {
        missing.append(MediaRange(start: passed, end: packet.time))
        let horizon = (try? packet.time - GapDetector.keptMissingSpan) ?? packet.time
        if missing[0].end < horizon { missing.removeAll { $0.end < horizon } }
      }
      passed = max(passed, end)
      decodedThrough = max(decodedThrough, decodeEnd)
    }
  }

  /// Creates a detector.
  public init(configuration: Configuration) {
    self.configuration = configuration
    requestedRange = configuration.range
    video = configuration.videoTrack.map { Self.account($0, configuration, isVideo: true) }
    audio = configuration.audioTrack.map { Self.account($0, configuration, isVideo: false) }
    horizon = configuration.range.start
  }

  private static func account(_ track: TrackID, _ configuration: Configuration, isVideo: Bool) -> Account {
    let start = configuration.range.start
    return Account(track: track, through: start, needsKeyframe: isVideo, factsSent: start)
  }

  /// Starts accounting for audio track `track` while the stream runs (an audio output joined a replay of
  /// video: its gaps reach the playback's timeline from now on), from the end of what of it passed last,
  /// else from where the video is accounted for; returns that time. Stretches of the track before it are
  /// not judged (its packets there passed unaccounted for; a timeline counts the track as missing
  /// there). After a flush it is accounted for from the range's start like the other tracks. Nil when an
  /// audio track is accounted for already (it stays the one). On the pipeline's executor.
  @discardableResult
  public func follow(audio track: TrackID) -> MediaTime? {
    guard audio == nil else { return nil }
    configuration.audioTrack = track
    let start = unaccounted[track]?.passed ?? video?.through ?? configuration.range.start
    audio = Account(track: track, through: start, needsKeyframe: false, factsSent: start)
    return start
  }

  /// Starts accounting for video track `track` while the stream runs (a first video output joined a
  /// replay of audio: the picture paces the play from then on), as ``follow(audio:)`` does for audio. What
  /// of it passed unaccounted for decodes on from where it ends (no keyframe is awaited there, unless
  /// what passed last was a hole: a branch decodes it); with nothing passed, its first packet must be a
  /// keyframe. Nil when a video track is accounted for already. On the pipeline's executor.
  @discardableResult
  public func follow(video track: TrackID) -> MediaTime? {
    guard video == nil else { return nil }
    configuration.videoTrack = track
    let passed = unaccounted[track]
    let start = passed?.passed ?? audio?.through ?? configuration.range.start
    video = Account(
      track: track, through: start, decodedThrough: passed?.decodedThrough,
      needsKeyframe: passed?.awaitsKeyframe ?? true, factsSent: start)
    return start
  }

  /// Stops accounting for audio track `track` while the stream runs (the last audio output left a
  /// replay of video: a detector built without it would not judge it): its packets pass unaccounted for
  /// from here, no gap of it is sent, and after a flush it is not accounted for either.
  /// ``follow(audio:)`` takes it back from the end of what passed. On the pipeline's executor.
  public func unfollow(audio track: TrackID) {
    guard let account = audio, account.track == track else { return }
    release(account)
    audio = nil
    configuration.audioTrack = nil
  }

  /// Stops accounting for video track `track` while the stream runs (the picture that drove a replay
  /// left, another channel's taking its place), as ``unfollow(audio:)`` does for audio;
  /// ``follow(video:)`` takes it back, decoding on from the end of what passed. On the pipeline's
  /// executor.
  public func unfollow(video track: TrackID) {
    guard let account = video, account.track == track else { return }
    release(account)
    video = nil
    configuration.videoTrack = nil
  }

  /// Lets `account` go: its track passes unaccounted for from here (what passes is noted as such).
  /// What passed before was accounted for (its gaps sent): nothing is known missing before what passes
  /// next.
  private func release(_ account: Account) {
    let track = account.track
    let through = max(unaccounted[track]?.passed ?? account.through, account.through)
    let decoded = max(unaccounted[track]?.decodedThrough ?? through, account.decodedThrough ?? through)
    let entry = Unaccounted(first: MediaTime(microseconds: .min), passed: through, decodedThrough: decoded)
    unaccounted[track, default: entry].passed = through
    unaccounted[track]?.decodedThrough = decoded
    unaccounted[track]?.awaitsKeyframe = account.needsKeyframe
  }

  /// The stretches where track `track` has no media among its packets that passed unaccounted for (by
  /// this node's rules: longer than ``audioTolerance`` for audio, than a millisecond for video, judged
  /// in decode order), from `time` on — what a branch joining at `time` plays of it is judged by them —
  /// up to where ``follow(audio:)`` or ``follow(video:)`` would start accounting for it. Nil when none of
  /// its packets passed since the last flush (nothing is known of it). On the pipeline's executor.
  public func missing(of track: TrackID, from time: MediaTime) -> [MediaRange]? {
    guard let entry = unaccounted[track] else { return nil }
    let tolerance = track.kind == .video ? Self.videoTolerance : Self.audioTolerance
    let first = entry.first
    let before = first > ((try? time + tolerance) ?? first) ? [MediaRange(start: time, end: first)] : []
    return before
      + entry.missing.compactMap { stretch in
        stretch.end > time ? MediaRange(start: max(stretch.start, time), end: stretch.end) : nil
      }
  }

  /// ``missing(of:from:)`` (`missing`), each stretch also sent as a gap of `track` (clipped to the range,
  /// with its reasons; `gaps`) before the next packet or event: behind what of the track is on its way
  /// (a graph that followed the track all along would have sent them ahead of the packets after each:
  /// the replay's rules have the joining output cross each before its first frame past the gap).
  /// On the pipeline's executor.
  public func announceMissing(
    of track: TrackID, from time: MediaTime
  ) -> (missing: [MediaRange], gaps: [RecordingGap])? {
    guard let stretches = missing(of: track, from: time) else { return nil }
    var sent: [RecordingGap] = []
    for stretch in stretches {
      guard let clipped = stretch.clamped(to: configuration.range) else { continue }
      sent.append(RecordingGap(range: clipped, tracks: [track], reasons: reasons(for: clipped, of: track)))
    }
    gaps += sent
    announced += sent
    return (stretches, sent)
  }

  /// Sends the gaps announced since the last packet or event.
  private func sendAnnounced(_ context: NodeContext<EncodedPacket>) {
    for gap in announced { context.send(.gap(gap)) }
    announced = []
  }

  /// How far back from the last packet of a track passing unaccounted for the stretches missing among
  /// them are kept: a branch joining at the position needs those of the few seconds read ahead of it
  /// (what the edges after this node hold).
  static let keptMissingSpan = MediaDuration.microseconds(120_000_000)

  // MARK: Media

  /// Accounts for a packet and passes it on (a gap first when one ends here); drops media a file cannot
  /// hold.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    if !announced.isEmpty { sendAnnounced(context) }
    if input.track == video?.track {
      videoPacket(input, context)
    } else if input.track == audio?.track {
      audioPacket(input, context)
    } else {
      // Another track may be followed in its stead (its output joins, or takes over the sound).
      passedUnaccounted(input)
      context.emit(input)
    }
    if let through = [video?.through, audio?.through].compactMap({ $0 }).min() { forgetBefore(through) }
  }

  private func videoPacket(_ packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    guard var video else { return context.emit(packet) }
    defer { self.video = video }
    let range = configuration.range
    // Continuity is judged in decode order (with B-frames, presentation times go back and forth), from
    // the frames passed on: what is dropped does not follow.
    let decodedThrough = video.decodedThrough
    let decodeEnd = packet.decodeTime.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
    if packet.decodeTime >= range.end {
      // Past the range (every later frame is shown at or after its decode time): it only tells how long
      // the last frame inside lasts.
      end(&video, at: range.end, tolerance: Self.videoTolerance, context)
      return context.emit(packet)
    }
    // Shown after the range but decoded before frames inside it (a reference of B-frames): passed on.
    if packet.time >= range.end {
      video.decodedThrough = max(decodedThrough ?? decodeEnd, decodeEnd)
      return context.emit(packet)
    }
    refute(at: packet.time, for: video.track)
    // A hole is longer than the tolerance of millisecond record times, or any silence a fact explains (a
    // range that starts a millisecond before its first frame). The first frame is judged by when it is
    // shown, the others by when they are decoded.
    let late = { (time: MediaTime, through: MediaTime) in
      time > ((try? through + Self.videoTolerance) ?? through)
    }
    let afterHole =
      decodedThrough.map { late(packet.decodeTime, $0) } ?? late(packet.time, video.through)
      || (packet.time > video.through && explained(MediaRange(start: video.through, end: packet.time), video.track))
    if configuration.writesFile, let format = video.format, !Self.sameVideo(packet.format, format) {
      video.needsKeyframe = true
      return drop(&video, at: packet.time, reason: .unsupportedMedia)
    }
    // Nothing before a keyframe can be decoded, in a file or on a screen.
    if (video.needsKeyframe || afterHole) && !packet.isKeyframe {
      video.needsKeyframe = true
      return drop(&video, at: packet.time, reason: .noKeyFrame)
    }
    video.needsKeyframe = false
    if configuration.writesFile && video.format == nil { video.format = packet.format }
    closeDroppedRun(&video, at: packet.time)
    if afterHole { sendGap(&video, until: packet.time, context) }
    // A frame lasts until the next one, but not over an object that holds no frame of the track.
    let end = packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
    var passed = packet
    if let cut = firstObjectStart(after: packet.time, endingBy: end), let duration = try? cut - packet.time {
      passed = packet.withDuration(duration)
      video.through = max(video.through, cut)
      video.decodedThrough = packet.decodeTime.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
    } else {
      video.through = max(video.through, end)
      video.decodedThrough = max(decodedThrough ?? decodeEnd, decodeEnd)
    }
    context.emit(passed)
  }

  /// Media of `track` at `time` came: facts over that instant do not apply to the track.
  private func refute(at time: MediaTime, for track: TrackID) {
    for index in facts.indices where facts[index].concerns(track) && facts[index].range.contains(time) {
      facts[index].refuted.insert(track)
    }
  }

  private func explained(_ range: MediaRange, _ track: TrackID) -> Bool {
    facts.contains { $0.concerns(track) && $0.range.overlaps(range) }
  }

  /// Notes where a track passing unaccounted for ends, and what is missing among its packets.
  private func passedUnaccounted(_ packet: EncodedPacket) {
    var end = packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
    var decodeEnd = packet.decodeTime.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
    // A picture lasts until the next one, but not over an object that holds none of the track (as a
    // followed track is judged: the last picture before a stretch without picture is not stretched over it).
    if packet.track.kind == .video, let cut = firstObjectStart(after: packet.time, endingBy: end),
      let duration = try? cut - packet.time
    {
      end = cut
      decodeEnd = packet.decodeTime.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
    }
    let first = Unaccounted(
      first: packet.time, passed: packet.time, decodedThrough: packet.decodeTime,
      awaitsKeyframe: packet.track.kind == .video)
    unaccounted[packet.track, default: first].pass(packet, end: end, decodeEnd: decodeEnd)
  }

  private func audioPacket(_ packet: EncodedPacket, _ context: NodeContext<EncodedPacket>) {
    guard var account = audio else { return context.emit(packet) }
    defer { audio = account }
    guard packet.time < configuration.range.end else { return context.emit(packet) }
    if configuration.writesFile {
      if let format = account.format, !Self.sameAudio(packet.format, format) {
        return drop(&account, at: packet.time, reason: .unsupportedMedia)
      }
      if account.format == nil {
        guard packet.format.codec == .aac else { return drop(&account, at: packet.time, reason: .unsupportedMedia) }
        account.format = packet.format
      }
    }
    closeDroppedRun(&account, at: packet.time)
    refute(at: packet.time, for: account.track)
    if packet.time > ((try? account.through + Self.audioTolerance) ?? account.through) {
      sendGap(&account, until: packet.time, context)
    } else {
      sendFactGaps(&account, before: packet.time, context)
    }
    account.through = max(
      account.through, packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max)))
    context.emit(packet)
  }

  private func drop(_ account: inout Account, at time: MediaTime, reason: GapReason) {
    guard var run = account.dropped else {
      account.dropped = (time, [reason])
      return
    }
    // Frames without a keyframe in an incompatible stretch are that stretch's.
    if !run.reasons.contains(reason) && reason != .noKeyFrame { run.reasons.append(reason) }
    account.dropped = run
  }

  private func closeDroppedRun(_ account: inout Account, at time: MediaTime) {
    guard let run = account.dropped else { return }
    account.dropped = nil
    if run.since < time {
      facts.append(Fact(range: MediaRange(start: run.since, end: time), tracks: [account.track], reasons: run.reasons))
    }
  }

  /// Ends the account at `time` (the range's end, the stream's end): what is missing before is a gap.
  private func end(
    _ account: inout Account, at time: MediaTime, tolerance: MediaDuration, _ context: NodeContext<EncodedPacket>
  ) {
    closeDroppedRun(&account, at: time)
    let silence = MediaRange(start: account.through, end: time)
    if time > ((try? account.through + tolerance) ?? account.through)
      || (time > account.through && explained(silence, account.track))
    {
      sendGap(&account, until: time, context)
    } else if account.track.kind == .audio {
      sendFactGaps(&account, before: time, context)
    }
    account.through = max(account.through, time)
  }

  /// Audio silent for less than the tolerance where a fact says a record was lost (one that could not be
  /// decoded; the encoder padded the frame before it) has a gap over each such fact's stretch, with its
  /// reasons; facts that overlap are one gap.
  private func sendFactGaps(_ account: inout Account, before time: MediaTime, _ context: NodeContext<EncodedPacket>) {
    let sent = account.factsSent
    let track = account.track
    let pending = facts.filter { $0.concerns(track) && $0.range.end > sent && $0.range.start < time }
      .sorted { $0.range.start < $1.range.start }
    var groups: [(range: MediaRange, reasons: [GapReason])] = []
    for fact in pending {
      let range = MediaRange(start: max(fact.range.start, sent), end: min(fact.range.end, time))
      guard !range.isEmpty else { continue }
      if let last = groups.last, range.start <= last.range.end {
        groups[groups.count - 1].range.end = max(last.range.end, range.end)
        groups[groups.count - 1].reasons.appendNew(fact.reasons)
      } else {
        groups.append((range, fact.reasons))
      }
    }
    account.factsSent = max(sent, groups.last?.range.end ?? sent)
    for group in groups {
      guard let range = group.range.clamped(to: configuration.range) else { continue }
      let gap = RecordingGap(range: range, tracks: [track], reasons: group.reasons)
      gaps.append(gap)
      context.send(.gap(gap))
    }
  }

  /// Sends the gap of `account`'s track from where it is accounted for to `end`, with its reasons.
  private func sendGap(_ account: inout Account, until end: MediaTime, _ context: NodeContext<EncodedPacket>) {
    let hole = MediaRange(start: account.through, end: end)
    account.through = end
    account.factsSent = max(account.factsSent, end)
    guard let clipped = hole.clamped(to: configuration.range) else { return }
    let gap = RecordingGap(range: clipped, tracks: [account.track], reasons: reasons(for: clipped, of: account.track))
    gaps.append(gap)
    context.send(.gap(gap))
  }

  /// The facts that overlap `hole`; where none does, `trackUnavailable` where objects were read and
  /// `noRecording` where none was.
  private func reasons(for hole: MediaRange, of track: TrackID) -> [GapReason] {
    let explaining = facts.filter { $0.concerns(track) && $0.range.overlaps(hole) }
    var reasons = [GapReason](unionOf: explaining, \.reasons)
    for part in Self.subtract(explaining.map(\.range), from: hole) {
      let unread = Self.subtract(objects, from: part)
      let unreadLength = unread.reduce(0) { $0 + $1.duration.microseconds }
      if unreadLength < part.duration.microseconds { reasons.appendNew([.trackUnavailable]) }
      if !unread.isEmpty { reasons.appendNew([.noRecording]) }
    }
    return reasons.isEmpty ? [.unknown] : reasons
  }

  /// The start of the first object that begins after `time` and ends by `end`: no frame of a track
  /// whose frame spans `[time, end)` lies in it.
  private func firstObjectStart(after time: MediaTime, endingBy end: MediaTime) -> MediaTime? {
    var low = 0
    var high = objects.count
    while low < high {
      let middle = (low + high) / 2
      if objects[middle].start <= time { low = middle + 1 } else { high = middle }
    }
    guard low < objects.count, objects[low].start < end, objects[low].end <= end else { return nil }
    return objects[low].start
  }

  /// Facts and objects wholly before `time` (less a frame's longest span) can explain nothing more.
  private func forgetBefore(_ time: MediaTime) {
    guard facts.count > 64 || objects.count > 64 else { return }
    let horizon = (try? time - SegmentDemuxer.maximumFrameDuration) ?? time
    if facts.count > 64 { facts.removeAll { $0.range.end < horizon } }
    if objects.count > 64, let keep = objects.firstIndex(where: { $0.end >= horizon }), keep > 0 {
      objects.removeFirst(keep)
    }
  }

  // MARK: Events

  /// Takes facts (`gap`), notes objects read (`objectStart`, passed on); passes other events on.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if !announced.isEmpty { sendAnnounced(context) }
    switch try MediaEvent(event) {
    case .gap(let gap):
      if let clipped = gap.range.clamped(to: configuration.range) {
        facts.append(Fact(range: clipped, tracks: gap.tracks, reasons: gap.reasons))
        // A fact of every track (a stretch no object covers) states what there is up to its end; one of
        // the sound alone (sound a file holds in a codec not read) says nothing of the picture.
        if gap.tracks.isEmpty || gap.tracks.contains(where: { $0.kind == .video }) {
          horizon = max(horizon, clipped.end)
        }
      }
    case .objectStart(let object):
      insert(object)
      horizon = max(horizon, min(object.end, configuration.range.end))
      context.send(event)
    default:
      context.send(event)
    }
  }

  private func insert(_ object: MediaRange) {
    guard !object.isEmpty else { return }
    var position = objects.count
    while position > 0 && objects[position - 1].start > object.start { position -= 1 }
    objects.insert(object, at: position)
  }

  /// The stream ended: what is missing up to where upstream stated what there is (the range's end,
  /// unless the source failed) is a gap of each track.
  public func finish(context: NodeContext<EncodedPacket>) throws {
    if !announced.isEmpty { sendAnnounced(context) }
    let end = max(horizon, min(video?.through ?? horizon, configuration.range.end))
    if var account = video {
      self.end(&account, at: end, tolerance: Self.videoTolerance, context)
      video = account
    }
    if var account = audio {
      self.end(&account, at: end, tolerance: Self.audioTolerance, context)
      audio = account
    }
  }

  /// Forgets everything (a seek): accounting starts again at the range's start.
  public func flush(context: NodeContext<EncodedPacket>) {
    configuration.range = context.seekTarget.map { requestedRange.starting(at: $0) } ?? requestedRange
    video = configuration.videoTrack.map { Self.account($0, configuration, isVideo: true) }
    audio = configuration.audioTrack.map { Self.account($0, configuration, isVideo: false) }
    horizon = configuration.range.start
    objects.removeAll()
    facts.removeAll()
    unaccounted = [:]
    announced = []
    generationStart = gaps.count
  }

  /// The gaps of `track` sent since the last flush that end after `time` (on the pipeline's executor):
  /// what a branch hung on downstream after the others' edges took them still has to cross.
  public func sent(of track: TrackID, endingAfter time: MediaTime) -> [RecordingGap] {
    gaps[generationStart...].filter { $0.concerns(track) && $0.range.end > time }
  }

  /// `gap`'s tracks and the other followed tracks missing over more than their tolerance of its range
  /// (facts of that track, or gaps of it sent since the last flush, overlap it): the tracks a hole
  /// affects, which a replay reports with the gap of the track it follows (R71). On the pipeline's
  /// executor.
  public func affectedTracks(of gap: RecordingGap) -> [TrackID] {
    var tracks = gap.tracks
    for track in [configuration.videoTrack, configuration.audioTrack].compactMap({ $0 }) where !tracks.contains(track) {
      let missing =
        facts.filter { $0.concerns(track) && $0.range.overlaps(gap.range) }.map(\.range)
        + gaps[generationStart...].filter { $0.concerns(track) && $0.range.overlaps(gap.range) }.map(\.range)
      let present = Self.subtract(missing, from: gap.range).reduce(0) { $0 + $1.duration.microseconds }
      let tolerance = track.kind == .video ? Self.videoTolerance : Self.audioTolerance
      if gap.range.duration.microseconds - present > tolerance.microseconds { tracks.append(track) }
    }
    return tracks
  }

  // MARK: Helpers

  static func sameVideo(_ format: TrackFormat, _ reference: TrackFormat) -> Bool {
    format.codec == reference.codec && format.width == reference.width && format.height == reference.height
  }

  static func sameAudio(_ format: TrackFormat, _ reference: TrackFormat) -> Bool {
    format.codec == reference.codec && format.sampleRate == reference.sampleRate
      && format.channels == reference.channels
  }

  /// The parts of `range` that none of `ranges` covers, in order.
  static func subtract(_ ranges: [MediaRange], from range: MediaRange) -> [MediaRange] {
    var parts: [MediaRange] = []
    var cursor = range.start
    for covered in ranges.sorted(by: { $0.start < $1.start }) where covered.end > cursor && covered.start < range.end {
      if covered.start > cursor { parts.append(MediaRange(start: cursor, end: covered.start)) }
      cursor = max(cursor, covered.end)
    }
    if cursor < range.end { parts.append(MediaRange(start: cursor, end: range.end)) }
    return parts
  }
}
