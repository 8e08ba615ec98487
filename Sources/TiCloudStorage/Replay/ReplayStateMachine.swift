import Nodes
import PipelineGraph

/// The seed's rules of play as a value: what a ``Replay`` knows of its plays, and how each input (a
/// call of the SDK, an event of the graph) changes it and what the Replay must then do.
///
/// No locks, no graph, no FFmpeg, no callbacks: the ``Replay`` holds one on its control executor, feeds it, and
/// performs what each transition returns (deliver a callback, flush or rebuild the graph, tell an
/// output). Tests drive it with tables of inputs (`ReplayStateMachineTests`).
///
/// Generations: every play, seek, stop and change of outputs bumps ``generation``; an event of the
/// graph carries the generation it was produced in and is ignored when it is older. ``playNumber``
/// is bumped by plays and stops only: callbacks of an older play not yet delivered are dropped (R70).
struct ReplayStateMachine {
  private(set) var outputs: [Output] = []
  private var nextOutput = 0
  /// The speed, kept across plays.
  var speed = ReplaySpeed.x1
  private(set) var play: Play?
  /// True while the play is running or paused (not stopped, completed or failed).
  private(set) var active = false
  /// The accepted play spans more than 10 days: it fails at once (R21) and no graph reads it, whatever
  /// seek or binding change comes before its failure is delivered.
  private(set) var tooLarge = false
  private(set) var paused = false
  /// Where the play or the latest seek started: a restart before any frame starts there again.
  private(set) var target = MediaTime(microseconds: 0)
  /// The position: the time of the frame that moved it last; nil before the play has one and after a
  /// stop. Times are `MediaTime` throughout: the seed's milliseconds exist only in the facade
  /// (`TiCloudStorageReplay`), which checks them as they become times.
  private(set) var position: MediaTime?
  private var lastReported: MediaTime?
  private var reportNext = true
  private(set) var generation = 0
  private(set) var playNumber = 0
  /// The position was reached after the play's or the latest seek's target (else a restart starts at
  /// the target).
  private(set) var positionFollowsTarget = false
  /// A seek was made whose target has not been presented yet (a later seek supersedes it).
  private var seekPending = false
  /// Outputs whose channel carried nothing while others of its kind did: failed with 6130 once the
  /// position reaches the time it was noticed at (O40).
  private var mismatches: [Replay.OutputID: MediaTime] = [:]
  /// Outputs that presented a frame since the play, the seek or their binding.
  private var presentingOutputs: Set<Replay.OutputID> = []
  /// Outputs that failed in this play: nothing more is presented to them (O9), until a new play.
  private var failedOutputs: Set<Replay.OutputID> = []
  /// The sound that steers the clock in a failed audio candidate's stead: the first to present after the
  /// failure (since the play or the seek), until it fails or leaves (one device steers, not each in turn).
  private(set) var soundInStead: Replay.OutputID?
  /// Outputs whose branch has presented all its media: completed with the play (O8), not before, as
  /// the play may still end with an error (R73).
  private var drainedOutputs: Set<Replay.OutputID> = []
  /// Gaps crossed since a recording failed for good (R73): reported once media after them plays; if
  /// none does, the play ends with the failure's code instead.
  private var heldGaps: [RecordingGap] = []
  /// Gaps a position candidate crossed while another one was the driver and it had presented nothing:
  /// reported if it takes over (the audio of a play whose video presents nothing).
  private var earlyGaps: [Replay.OutputID: [RecordingGap]] = [:]
  /// Gaps found late of a track judged from now on, and the output whose track it is: each crossed by
  /// that output before its first frame at or after the gap's end.
  var lateGaps: [(gap: RecordingGap, owner: Replay.OutputID)] = []
  /// The ranges reported since the play or the seek (a take-over reports none twice).
  private(set) var reportedRanges: [MediaRange] = []
  /// The first and the latest frame each output presented since the play or the seek.
  private(set) var presentedSpan: [Replay.OutputID: (first: MediaTime, latest: MediaTime)] = [:]
  /// The output whose frames moved the position last in this graph generation (nil after a play, a
  /// seek or a restart): another one takes over without moving the position back.
  private var positionDriver: Replay.OutputID?
  /// Frames presented over every play.
  private(set) var videoFrames = 0
  private(set) var audioFrames = 0

  /// The longest span a play reads: 10 days, as a listing.
  static let maximumSpan = MediaDuration.microseconds(864_000_000_000)
  /// The least media between two position reports (`onTimeChanged`).
  static let reportInterval = MediaDuration.microseconds(100_000)

  // MARK: Outputs

  /// Binds an output of `track`; true when a play is active (its graph is rebuilt with it).
  mutating func bind(_ track: TrackID) -> (Replay.OutputID, restart: Bool) {
    let id = Replay.OutputID(value: nextOutput)
    nextOutput += 1
    // Where the play is (not the position before a seek whose first frame is still to come).
    outputs.append(Output(id: id, track: track, joinsAt: active ? recordingStart : nil))
    return (id, active)
  }

  /// Removes an output; true when a play is active (its graph is rebuilt without it).
  mutating func unbind(_ id: Replay.OutputID) -> Bool {
    guard let index = outputs.firstIndex(where: { $0.id == id }) else { return false }
    outputs.remove(at: index)
    presentingOutputs.remove(id)
    failedOutputs.remove(id)
    drainedOutputs.remove(id)
    return active
  }

  // MARK: Commands

  /// A play of `range` from `initial` (or its start): `invalidArgument` for an empty range or an initial
  /// time outside it, `notBound` without outputs; else the play is accepted (the previous one replaced,
  /// its callbacks dropped: `ok`) and `tooLarge` says it must fail at once (R21). (Times the seed's
  /// milliseconds cannot name are refused at the facade, where they become times.)
  mutating func play(_ range: MediaRange, from initial: MediaTime? = nil, token: String) -> (
    code: TiErrorCode, tooLarge: Bool
  ) {
    guard !range.isEmpty else { return (.invalidArgument, false) }
    if let initial, !range.contains(initial) { return (.invalidArgument, false) }
    guard !outputs.isEmpty else { return (.notBound, false) }
    generation += 1
    playNumber += 1
    play = Play(start: range.start, end: range.end, token: token)
    // `duration` saturates: a span too long to count is too large.
    tooLarge = range.duration > Self.maximumSpan
    active = true
    paused = false
    target = initial ?? range.start
    seekPending = false
    position = nil
    lastReported = nil
    positionFollowsTarget = false
    failedOutputs = []
    resetForNewTarget()
    return (.ok, tooLarge)
  }

  /// Pauses or resumes; false without an active play.
  mutating func setPaused(_ paused: Bool) -> Bool {
    guard active else { return false }
    self.paused = paused
    return true
  }

  /// A seek to `time`: the target it supersedes (R32: reported, not silently lost), or why it is refused.
  mutating func seek(to time: MediaTime) -> Result<MediaTime?, TiError> {
    guard active, let play else { return .failure(TiError(.notStarted, "no active play")) }
    guard (play.start..<play.end).contains(time) else {
      return .failure(TiError(.invalidArgument, "the target is outside the play's range"))
    }
    generation += 1
    let superseded = seekPending ? target : nil
    seekPending = true
    target = time
    positionFollowsTarget = false
    resetForNewTarget()
    return .success(superseded)
  }

  /// What a play and a seek start afresh.
  private mutating func resetForNewTarget() {
    heldGaps = []
    earlyGaps = [:]
    lateGaps = []
    reportedRanges = []
    positionDriver = nil
    reportNext = true
    mismatches = [:]
    presentingOutputs = []
    soundInStead = nil
    presentedSpan = [:]
    drainedOutputs = []
    for index in outputs.indices { outputs[index].joinsAt = nil }
  }

  /// Ends the play without callbacks; idempotent.
  mutating func stop() {
    generation += 1
    playNumber += 1
    heldGaps = []
    active = false
    paused = false
    position = nil
  }

  /// The outputs or recorders changed: true when a play is active and its graph must be rebuilt.
  mutating func restart() -> Bool {
    guard active else { return false }
    generation += 1
    earlyGaps = [:]
    lateGaps = []
    positionDriver = nil
    return true
  }

  /// Where the active play is, or where it starts when nothing was presented yet.
  var recordingStart: MediaTime? {
    guard active else { return nil }
    return positionFollowsTarget ? position ?? target : target
  }

  // MARK: Events of the graph

  /// Output `id` presented a frame of `time` in `generation`; `candidates` may move the position.
  /// `listening`: an `onTimeChanged` handler is set — a report nobody hears is not spent (a handler set
  /// later hears the next frame's position at once, R52).
  mutating func presented(
    _ time: MediaTime, by id: Replay.OutputID, video: Bool, candidates: [Replay.OutputID], generation: Int,
    listening: Bool = true
  ) -> FrameVerdict {
    guard self.generation == generation, let index = outputs.firstIndex(where: { $0.id == id }),
      !failedOutputs.contains(id)
    else { return FrameVerdict() }
    var verdict = FrameVerdict(accepted: true)
    // Its own gaps found late that this frame is past: crossed before it, where a graph that judged the
    // track all along sends them.
    if !lateGaps.isEmpty { verdict.gaps = reached(time, by: id, candidates: candidates) }
    if !presentingOutputs.contains(id) {
      presentingOutputs.insert(id)
      outputs[index].joinsAt = nil
      verdict.firstFrame = true
    }
    presentedSpan[id] = (presentedSpan[id]?.first ?? time, time)
    if !video {
      if let candidate = audioCandidate(of: candidates), failed(candidate), !(soundInStead.map(presents) ?? false) {
        soundInStead = id
      }
      verdict.steersClock = steeringSound(of: candidates) == id
    }
    let movesPosition = driver(of: candidates) == id
    if movesPosition && (!heldGaps.isEmpty || earlyGaps[id] != nil) {
      // Media after a failed recording plays: its gaps are gaps (R73); so are those crossed before taking over.
      let reported = reportedRanges
      let early = (earlyGaps[id] ?? []).filter { gap in !reported.contains { $0.overlaps(gap.range) } && ahead(gap) }
      let now = heldGaps + early
      // In the order of the recording, with the late gaps this frame reached.
      verdict.gaps = (now + verdict.gaps).sorted { $0.range.start < $1.range.start }
      reportedRanges = Array((reportedRanges + now.map(\.range)).suffix(64))
      if !now.isEmpty { reportNext = true }
      heldGaps = []
      earlyGaps = [:]
    }
    if video { videoFrames += 1 } else { audioFrames += 1 }
    guard movesPosition else { return verdict }
    verdict.movesPosition = true
    if !mismatches.isEmpty {
      let reached = mismatches.filter { $0.value <= time }
      for id in reached.keys {
        mismatches[id] = nil
        failedOutputs.insert(id)
      }
      verdict.mismatched = outputs.map(\.id).filter { reached[$0] != nil }
    }
    let position = time
    // The audio moved the position while the video decoded up to its first frame: the video takes over
    // from where the audio is (its first frames may be a little earlier, presented late).
    if let driver = positionDriver, driver != id, let current = self.position, position < current {
      return verdict
    }
    positionDriver = id
    self.position = position
    positionFollowsTarget = true
    seekPending = false
    // onTimeChanged: at most once per 100 ms of media, and at once after a play, a seek or a gap.
    let due = lastReported.map { last in (try? position - last).map { $0 >= Self.reportInterval } ?? true } ?? true
    guard listening, reportNext || due else { return verdict }
    reportNext = false
    lastReported = position
    verdict.report = position
    return verdict
  }

  /// Whether output `id` presents in this play (it presented since the play, the seek or its binding, and
  /// has not failed): one that may take the position over from a driver that leaves.
  func presents(_ id: Replay.OutputID) -> Bool { presentingOutputs.contains(id) && !failedOutputs.contains(id) }

  /// Whether output `id` failed in the current play (its branch presents nothing more).
  func failed(_ id: Replay.OutputID) -> Bool { failedOutputs.contains(id) }

  /// Output `id`, which joined and had not presented, takes the position over from a driver that left,
  /// shown from the position: a graph built again starts it there, not at the next keyframe.
  mutating func takeOver(_ id: Replay.OutputID) {
    if let index = outputs.firstIndex(where: { $0.id == id }) { outputs[index].joinsAt = nil }
  }

  /// Output `id` crossed `gap` in `generation`: the gaps to report now (none while it does not move
  /// the position, or after a recording that failed for good: held until media plays, R73).
  mutating func crossed(
    _ gap: RecordingGap, by id: Replay.OutputID, candidates: [Replay.OutputID], generation: Int
  ) -> [RecordingGap] {
    guard self.generation == generation, candidates.contains(id) else { return [] }
    // Crossed now by the output it was expected of (its copy came first, or its frames reached it): once.
    lateGaps.removeAll { $0.gap == gap && $0.owner == id }
    guard driver(of: candidates) == id else {
      if !presentingOutputs.contains(id), earlyGaps[id]?.contains(gap) != true {
        earlyGaps[id, default: []].append(gap)
      }
      return []
    }
    // Reported (or held) already: since the play or the seek (a graph rebuilt at the position crosses it
    // again, clamped at its start), or, found late, where the position passed one reported.
    if heldGaps.contains(gap) || reportedRanges.contains(where: { $0.covers(gap.range, passed: position) }) {
      return []
    }
    lateGaps.removeAll { $0.gap == gap }
    return admit([gap])
  }

  /// Gaps the position crossed: those to report now; after a recording that failed for good they wait
  /// for media that plays (R73).
  mutating func admit(_ gaps: [RecordingGap]) -> [RecordingGap] {
    var now: [RecordingGap] = []
    for gap in gaps {
      reportNext = true
      if Self.failure(of: gap) != nil || !heldGaps.isEmpty {
        heldGaps.append(gap)
      } else {
        now.append(gap)
      }
    }
    reportedRanges = Array((reportedRanges + now.map(\.range)).suffix(64))
    return now
  }

  /// A bound channel carries nothing (O40): its output fails once the position reaches `time` (the media
  /// of its kind kept coming for 5 s of playback), or at the end if it does not.
  mutating func channelMissing(_ track: TrackID, noticedAt time: MediaTime, generation: Int) {
    guard self.generation == generation, let output = outputs.first(where: { $0.track == track }),
      !failedOutputs.contains(output.id)
    else { return }
    mismatches[output.id] = time
  }

  /// Output `id`'s branch presented all its media.
  mutating func drained(_ id: Replay.OutputID, generation: Int) {
    if self.generation == generation { drainedOutputs.insert(id) }
  }

  /// Output `id`'s own branch failed: true when that is news (the output is told, once).
  mutating func outputFailed(_ id: Replay.OutputID, generation: Int) -> Bool {
    guard self.generation == generation, !failedOutputs.contains(id) else { return false }
    failedOutputs.insert(id)
    return true
  }

  /// The graph of `generation` reached its end of stream.
  mutating func completed(generation: Int, candidates: [Replay.OutputID]) -> Completion {
    guard self.generation == generation else { return .ignored }
    // Gaps the driver crossed before it took over and presented nothing since (the first failed) are the
    // play's.
    var early: [RecordingGap] = []
    if !earlyGaps.isEmpty {
      let fallback = driver(of: candidates)
      let gaps = (fallback.flatMap { earlyGaps[$0] } ?? []).filter(ahead)
      earlyGaps = [:]
      early = admit(gaps)
    }
    // Nothing played after a recording that failed for good: the play ends with its error (R73).
    if let failure = heldGaps.lazy.compactMap(Self.failure(of:)).last {
      guard fail(generation: generation) else { return .ignored }
      return .failed(failure, earlyGaps: early)
    }
    guard active, let play else { return .ignored }
    // An output whose channel carried nothing fails rather than completes, even where nothing
    // presented moved the position to the time its mismatch was noticed (O40).
    let mismatched = outputs.map(\.id).filter { mismatches[$0] != nil && !failedOutputs.contains($0) }
    let completedOutputs = outputs.map(\.id).filter {
      drainedOutputs.contains($0) && !failedOutputs.contains($0) && mismatches[$0] == nil
    }
    drainedOutputs = []
    mismatches = [:]
    active = false
    paused = false
    let moved = position != play.end
    position = play.end
    lastReported = play.end
    return .completed(
      Completed(
        earlyGaps: early, mismatched: mismatched, completedOutputs: completedOutputs, reportsEnd: moved, end: play.end))
  }

  /// Play number `number` failed before it had a graph (R21: over 10 days): true when it is still the
  /// active play (it ends, with `onError`), whatever seeks or binding changes came since.
  mutating func fail(play number: Int) -> Bool {
    guard playNumber == number, active else { return false }
    active = false
    paused = false
    return true
  }

  /// The play of `generation` failed: true when it was the active one (it ends, with `onError`).
  mutating func fail(generation: Int) -> Bool {
    guard self.generation == generation, active else { return false }
    active = false
    paused = false
    return true
  }
}
