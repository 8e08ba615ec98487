import PipelineGraph
import Synchronization

/// The speed and hold-frame scheduler of Replay: presents each frame at
/// `anchor + (pts − anchorPts) / rate` on the pipeline clock.
///
/// - Above 1× the first picture of a play or a seek is presented as soon as it comes, the timeline's
///   clock starting its ``PlaybackTimeline/startLatency`` later (a decoder's first frames come
///   irregularly; a frame lasts 5 ms at 8×).
/// - A frame is held (input suspended, so backpressure reaches the decoder and the source) until its
///   instant; at slow speeds each frame thus stays presented for its scaled duration, and the last one
///   is held for its own before the end of stream goes on, so the position reaches the end on time.
/// - A frame later than its own scaled duration is late: at 1× and slower it is presented all the same
///   and counted (``Counters/late``); at fast speeds, when it arrives late, it is dropped (and counted;
///   the first frame of a play or a seek, and a frame whose timer runs late, are shown and counted as
///   late); after
///   a run of drops it asks upstream for `essentialOnly` (a `QualityOfService` event: its decoder
///   decodes keyframes only) until a frame arrives on time again, then for `everything`.
/// - A `muted` pacer (the audio branch) presents nothing off 1×, and asks upstream for `nothing` then
///   (its decoder keeps the packets, and decodes them first back at 1×); nor does it present a frame
///   later than its duration.
/// - The anchor is a ``PlaybackTimeline`` that the pacers of one playback share (audio and video of the
///   same time are presented together). The first frame waits for the first frames of the other
///   pacers that preroll (bounded by ``PlaybackTimeline/prerollLimit``); a muted pacer is not waited
///   for. Pause freezes the anchor (the wait is added to it on resume); a speed change re-anchors at the
///   current position, without a seek; a hole (a stretch where every track has a gap) is skipped
///   without waiting; a gap of some tracks only keeps the time.
/// - With a `lead` (an audio device that holds what it plays), a frame at 1× is handed on that long
///   before its instant; lateness is still measured against the instant.
/// - Frames before `presentFrom` (decoded from the keyframe before a seek target) are not presented:
///   the first presented frame is the first whose time is not earlier than the target. With
///   `showsFirstFrameWhilePaused` (a seek while paused) that first frame is presented at once, and the
///   pacer holds the next one until it resumes. A seek's flush (`NodeContext/seekTarget`) makes its
///   target the new `presentFrom`, and `showsFirstFrameWhilePaused` becomes `showsFirstFrameAfterSeek`
///   (a video pacer shows the target's frame while paused, an audio one plays nothing); a flush without
///   a target restores both as made. A flush ends keyframes-only decoding (the decoder's own flush does);
///   a muted pacer off 1× asks for `nothing` again.
///
/// Control (``setRate(_:)``, ``pause()``, ``resume()``, ``setRole(muted:lead:)``) may come from any thread; it takes effect on
/// the pacer's executor: made before `start` it applies at start, after `stop` it is ignored, and a
/// flush keeps it. Everything else is confined to that executor; ``statistics`` may be read from any
/// thread.
public final class Pacer: Node {
  /// Decoded frames.
  public typealias Input = DecodedFrame
  /// The same frames, at their presentation instants.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  private var presentFrom: MediaTime?
  private let initialPresentFrom: MediaTime?
  /// Presents nothing off 1× (as applied: ``setRole(muted:lead:)`` changes it).
  private var muted: Bool { applied.muted }
  private var showsFirstFrameWhilePaused: Bool
  private let initiallyShowsFirstFrame: Bool
  private let showsFirstFrameAfterSeek: Bool
  /// Whether the timeline's anchor waits for this pacer's first frame (now: after a seek,
  /// `prerollsAfterSeek`).
  private var prerolls: Bool
  private let prerollsAfterSeek: Bool
  /// How long before its instant a frame is handed on (an audio device that holds what it plays).
  private var lead: MediaDuration { applied.lead }
  private let shared: Locked<Shared>
  private var applied: Control
  /// The anchor this pacer shares.
  public let timeline: PlaybackTimeline
  /// The timeline's ``PlaybackTimeline/version`` the pending frame was scheduled under.
  private var timelineVersion = 0
  /// This pacer's copy of the timeline's mapping: a frame's instant without the timeline's lock.
  private var timelineReader: PlaybackTimeline.Reader
  private var pending: DecodedFrame?
  private var timer: ClockTimer?
  private var consecutiveDrops = 0
  /// How far ahead of its instant an audio pacer hands frames to a device that holds its sound
  /// (`AudioDevice/latency` not nil): enough to ride out a loaded machine's hiccups without running dry,
  /// short enough that a pause or a seek is heard at once (the device pauses and flushes too).
  public static let audioLead = MediaDuration.microseconds(100_000)
  /// How early a timer may fire and its frame still be presented: a slewed clock's steps (1 ms) move a
  /// timer by that much; more is a clock set back, and the frame waits again.
  private static let earlyTolerance = MediaDuration.microseconds(2_000)
  /// Late frames dropped in a row before upstream is asked for keyframes only.
  private static let dropsBeforeKeyframesOnly = 3
  /// Where the last frame presented since the start or the last flush ends, and its track. Not the frame:
  /// holding it would keep its picture (megabytes) from the decoder's pool until the next one, and after
  /// the play's end.
  private var lastPresented: (end: MediaTime, track: TrackID)?
  private var endHeld = false
  /// A muted pacer back at 1×: late frames are dropped until one is on time.
  private var resyncing = false
  private let counters = Counters()

  struct Control: Sendable, Equatable {
    var rate: PlaybackRate
    var paused: Bool
    var muted: Bool
    var lead: MediaDuration
  }

  /// What control calls from other threads share with the executor.
  struct Shared: Sendable {
    var wanted: Control
    /// Runs ``apply(_:)`` on the executor; replaced at start and at each flush (a completion of an
    /// older generation is dropped).
    var wake: Completion<Void>?
  }

  /// Frames presented, dropped as late, and not presented because muted.
  ///
  /// No states: atomic counters, written on the pacer's executor and readable from any thread.
  public final class Counters: Sendable {
    /// Frames presented.
    public let presented = Atomic(0)
    /// Frames dropped because they were late.
    public let dropped = Atomic(0)
    /// Frames presented late: later than their own scaled duration after their instant, when the next
    /// frame was already due (at 1× and slower such a frame is shown all the same, not dropped; at fast
    /// speeds a frame that arrives late is dropped instead, but one whose timer runs late is shown; a
    /// player that never falls behind counts none). What a benchmark's "no late frame" counts.
    public let late = Atomic(0)
    /// Frames skipped because the pacer was muted (audio off 1×), and audio frames dropped as past (read
    /// while muted, or later than their duration).
    public let muted = Atomic(0)
  }

  /// What the pacer did so far (readable from any thread).
  public var statistics: Counters { counters }

  /// A pacer at `rate`, presenting nothing earlier than `presentFrom`; `muted` for audio; presenting its
  /// first frame even while paused when `showsFirstFrameWhilePaused` (after a seek, when
  /// `showsFirstFrameAfterSeek`). Pacers of one playback share a
  /// `timeline` made with the same rate and pause state; nil gives the pacer one of its own. The
  /// timeline's anchor waits for this pacer's first frame when it `prerolls` (after a seek, when
  /// `prerollsAfterSeek`: by default the same; a branch that joined a running play holds nothing back
  /// at first, and is one of the play's pacers at its seeks). A `lead` hands each frame on
  /// that long before its instant (a device that holds what it plays hears it on time); lateness is still
  /// measured against the instant.
  public init(
    name: String = "Pacer", rate: PlaybackRate = .normal, paused: Bool = false, presentFrom: MediaTime? = nil,
    muted: Bool = false, showsFirstFrameWhilePaused: Bool = false, showsFirstFrameAfterSeek: Bool = false,
    timeline: PlaybackTimeline? = nil, prerolls: Bool = true, prerollsAfterSeek: Bool? = nil,
    lead: MediaDuration = .zero
  ) {
    self.prerolls = prerolls
    self.prerollsAfterSeek = prerollsAfterSeek ?? prerolls
    initialPresentFrom = presentFrom
    initiallyShowsFirstFrame = showsFirstFrameWhilePaused
    self.showsFirstFrameAfterSeek = showsFirstFrameAfterSeek
    let timeline = timeline ?? PlaybackTimeline(rate: rate, paused: paused)
    self.timeline = timeline
    timelineReader = timeline.reader()
    self.name = name
    self.presentFrom = presentFrom
    self.showsFirstFrameWhilePaused = showsFirstFrameWhilePaused
    let initial = Control(rate: rate, paused: paused, muted: muted, lead: max(.zero, lead))
    shared = Locked(Shared(wanted: initial))
    applied = initial
  }

  /// Changes the speed, keeping the current position.
  public func setRate(_ rate: PlaybackRate) { update { $0.rate = rate } }

  /// Stops presenting; the position freezes.
  public func pause() { update { $0.paused = true } }

  /// Presents again from where it paused.
  public func resume() { update { $0.paused = false } }

  /// Mutes the pacer off 1× (or not) and hands frames `lead` before their instant at 1× from now on: an
  /// audio pacer whose play gains a picture (the picture paces the play from then on, and the sound is
  /// handed ahead to a device that holds what it plays), as if it had been made so. Takes effect on the
  /// executor, as ``setRate(_:)``.
  public func setRole(muted: Bool, lead: MediaDuration) {
    update {
      $0.muted = muted
      $0.lead = max(.zero, lead)
    }
  }

  private func update(_ change: (inout Control) -> Void) {
    let wake = shared.withLock { shared -> Completion<Void>? in
      change(&shared.wanted)
      return shared.wake
    }
    wake?(())
  }

  /// Arms the control channel.
  public func start(context: NodeContext<DecodedFrame>) throws { arm(context) }

  private func arm(_ context: NodeContext<DecodedFrame>) {
    let completion = context.makeCompletion { [unowned self] (_: Void) in apply(context) }
    shared.withLock { $0.wake = completion }
    registerWithTimeline(context)
    // A change made before the channel was armed.
    apply(context)
  }

  /// A muted pacer presents nothing: the anchor does not wait for it, and upstream rests. (`unmuted`: it
  /// was muted until now, and upstream may have rested.)
  private func registerWithTimeline(_ context: NodeContext<DecodedFrame>, unmuted: Bool = false) {
    let silent = muted && applied.rate != .normal
    if muted || unmuted {
      context.sendUpstream(.qualityOfService(QualityOfService(silent ? .nothing : .everything)))
    }
    timeline.register(ObjectIdentifier(self), wake: shared.withLock { $0.wake }, prerolls: prerolls && !silent)
  }

  private func apply(_ context: NodeContext<DecodedFrame>) {
    let wanted = shared.withLock { $0.wanted }
    let version = timeline.version
    // A control call, or a hole found since the pending frame was scheduled (it may be due earlier).
    guard wanted != applied || version != timelineVersion else { return }
    timelineVersion = version
    // The first pacer to apply a change moves the shared anchor; the others find it done.
    timeline.apply(rate: wanted.rate, paused: wanted.paused, now: context.now)
    if wanted.paused && !applied.paused {
      timer?.cancel()
      timer = nil
    }
    let rateChanged = wanted.rate != applied.rate
    let resumed = applied.paused && !wanted.paused
    let roleChanged = wanted.muted != applied.muted
    let wasMuted = applied.muted
    applied = wanted
    if (muted && rateChanged) || roleChanged { registerWithTimeline(context, unmuted: wasMuted && !muted) }
    if muted && rateChanged { resyncing = applied.rate == .normal }
    if let frame = pending {
      timer?.cancel()
      timer = nil
      pending = nil
      if muted && applied.rate != .normal {
        counters.muted.add(1, ordering: .relaxed)
        if !applied.paused { context.resumeInput() }
      } else {
        schedule(frame, context: context)
      }
    } else if endHeld {
      timer?.cancel()
      timer = nil
      if !applied.paused { releaseEnd(context: context) }
    } else if resumed {
      // A frame held when the pause came and shown at once then (a joining branch's first) left the
      // input suspended: the next one is taken now. (A play that froze there: a second window bound
      // and paused before its first picture.)
      context.resumeInput()
    }
  }

  /// Schedules or presents a frame.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    if let presentFrom, input.time < presentFrom { return }
    if muted && applied.rate != .normal {
      counters.muted.add(1, ordering: .relaxed)
      return
    }
    schedule(input, context: context)
  }

  private func schedule(_ frame: DecodedFrame, context: NodeContext<DecodedFrame>) {
    let now = context.now
    timelineVersion = timeline.version
    // When the frame is handed on, and the instant its lateness is measured against: the same, but for
    // the lead (sound, which plays at 1× only), which hands it on that much earlier.
    let due: ClockInstant
    let instant: ClockInstant
    switch timeline.schedule(
      of: frame.time, track: frame.track, now: now, for: ObjectIdentifier(self), reading: &timelineReader)
    {
    case .at(let at):
      instant = at
      // Above 1× the first picture of a play or a seek is shown at once: the timeline's clock starts its
      // `startLatency` after it.
      let first =
        frame.track.kind == .video && lastPresented == nil && applied.rate.numerator > applied.rate.denominator
        && at.microseconds &- now.microseconds <= timeline.startLatency.microseconds
      let early = first ? at.microseconds &- now.microseconds : applied.rate == .normal ? lead.microseconds : 0
      due = ClockInstant(microseconds: at.microseconds &- early)
    case .awaitingPreroll(let deadline):
      // Held until the other pacers' first frames anchor the clock (a wake-up) or the limit passes; a
      // seek while paused shows its picture at once all the same.
      if applied.paused && showsFirstFrameWhilePaused && lastPresented == nil {
        present(frame, context: context)
        return
      }
      hold(frame, context: context)
      guard !applied.paused else { return }
      timer = context.scheduleTimer(at: deadline) { [unowned self] in
        guard let frame = pending else { return }
        pending = nil
        timer = nil
        schedule(frame, context: context)
      }
      return
    }
    guard !applied.paused else {
      if showsFirstFrameWhilePaused && lastPresented == nil {
        present(frame, context: context)
      } else {
        hold(frame, context: context)
      }
      return
    }
    if due <= now {
      let lateness = now.microseconds - instant.microseconds
      let allowed = allowance(of: frame)
      // Audio decoded again after a muted stretch starts with what was read then: what is past is not
      // played (late audio would put the sound behind the picture), until a frame is on time.
      // A frame held until now (a wake-up, the preroll's end) had suspended the input: a drop resumes it.
      if muted && (lateness > allowed || resyncing && lateness > 0) {
        counters.muted.add(1, ordering: .relaxed)
        if !applied.paused { context.resumeInput() }
        return
      }
      if lateness > allowed && (applied.rate.numerator <= applied.rate.denominator || lastPresented == nil) {
        counters.late.add(1, ordering: .relaxed)
      }
      if applied.rate.numerator > applied.rate.denominator && lastPresented != nil && lateness > allowed {
        counters.dropped.add(1, ordering: .relaxed)
        consecutiveDrops += 1
        if consecutiveDrops == Self.dropsBeforeKeyframesOnly {
          context.sendUpstream(.qualityOfService(QualityOfService(.essentialOnly, lateness: .microseconds(lateness))))
        }
        if !applied.paused { context.resumeInput() }
        return
      }
      present(frame, context: context)
      return
    }
    hold(frame, context: context)
    timer = context.scheduleTimer(at: due) { [unowned self] in
      guard let frame = pending else { return }
      pending = nil
      timer = nil
      // The clock was set back while the timer waited (an audio master clock catching up with a late
      // sound): the frame waits again, on the clock as it is now.
      if due.microseconds - context.now.microseconds > Self.earlyTolerance.microseconds {
        schedule(frame, context: context)
        return
      }
      // A timer runs when its executor gets to it: on a busy machine, past the frame's time.
      if context.now.microseconds - instant.microseconds > allowance(of: frame) {
        counters.late.add(1, ordering: .relaxed)
      }
      present(frame, context: context)
      context.resumeInput()
    }
  }

  /// How late a frame may be and still be on time: its duration at the applied rate.
  private func allowance(of frame: DecodedFrame) -> Int64 {
    ((try? frame.duration.scaled(by: applied.rate)) ?? frame.duration).microseconds
  }

  private func hold(_ frame: DecodedFrame, context: NodeContext<DecodedFrame>) {
    pending = frame
    context.suspendInput()
  }

  private func present(_ frame: DecodedFrame, context: NodeContext<DecodedFrame>) {
    resyncing = false
    if consecutiveDrops > 0 {
      if consecutiveDrops >= Self.dropsBeforeKeyframesOnly {
        context.sendUpstream(.qualityOfService(QualityOfService(.everything)))
      }
      consecutiveDrops = 0
    }
    lastPresented = ((try? frame.time + frame.duration) ?? frame.time, frame.track)
    counters.presented.add(1, ordering: .relaxed)
    context.emit(frame)
    if !applied.paused && pending == nil { context.resumeInput() }
  }

  /// A gap goes to the timeline (where every track has one, a hole is skipped, not waited through);
  /// events pass on.
  public func handle(_ event: PipelineEvent, context: NodeContext<DecodedFrame>) throws {
    if case .gap(let gap) = try MediaEvent(event) {
      timeline.note(gap)
      // A gap where this pacer would start: its first frame comes later, the others need not wait.
      if lastPresented == nil && gap.range.end > (presentFrom ?? MediaTime(microseconds: .min)) {
        timeline.excuse(ObjectIdentifier(self), now: context.now)
      }
    }
    context.send(event)
  }

  /// Holds the end of stream until the last frame has lasted its scaled duration.
  public func finish(context: NodeContext<DecodedFrame>) throws {
    if lastPresented == nil && pending == nil { timeline.excuse(ObjectIdentifier(self), now: context.now) }
    guard lastPresented != nil, !endHeld else { return }
    endHeld = true
    context.holdEndOfStream()
    if !applied.paused { releaseEnd(context: context) }
  }

  /// Lets the end of stream go once the last frame has lasted its scaled duration.
  private func releaseEnd(context: NodeContext<DecodedFrame>) {
    guard let last = lastPresented else { return context.releaseEndOfStream() }
    let due = timeline.instant(of: last.end, track: last.track, now: context.now)
    guard due > context.now else { return context.releaseEndOfStream() }
    timer = context.scheduleTimer(at: due) { [unowned self] in
      timer = nil
      context.releaseEndOfStream()
    }
  }

  /// Forgets the anchor and what it held (a seek; the pacers sharing the timeline flush together).
  public func flush(context: NodeContext<DecodedFrame>) {
    timer?.cancel()
    timer = nil
    pending = nil
    timeline.reset()
    if let target = context.seekTarget {
      presentFrom = target
      showsFirstFrameWhilePaused = showsFirstFrameAfterSeek
      prerolls = prerollsAfterSeek
    } else {
      presentFrom = initialPresentFrom
      showsFirstFrameWhilePaused = initiallyShowsFirstFrame
    }
    // Keyframes-only ends at the decoder's own flush (`QualityOfService`): nothing to say here.
    consecutiveDrops = 0
    lastPresented = nil
    endHeld = false
    resyncing = false
    arm(context)
  }

  /// Cancels the pending presentation.
  public func stop(context: NodeContext<DecodedFrame>) {
    timer?.cancel()
    timer = nil
    shared.withLock { $0.wake = nil }
    timeline.register(ObjectIdentifier(self), wake: nil)
  }
}
