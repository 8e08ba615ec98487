import Nodes
import PipelineGraph

/// What the state machine answers: the inputs of a graph, and what the Replay must do after an event.
extension ReplayStateMachine {
  /// One bound output, as the rules see it.
  struct Output: Equatable {
    let id: Replay.OutputID
    let track: TrackID
    /// Bound while a play was running: its branch starts at the next keyframe from here.
    var joinsAt: MediaTime?
    var isVideo: Bool { track.kind == .video }
  }

  /// The range and token of a play.
  struct Play: Equatable {
    var start: MediaTime
    var end: MediaTime
    var token: String
  }

  /// What a graph is started from (the Replay adds its outputs' targets).
  struct Start: Equatable {
    var range: MediaRange
    var play: Play
    var outputs: [Output]
    var speed: ReplaySpeed
    var paused: Bool
    var generation: Int
    /// Where outputs that were not joining start presenting (a seek's target, or just after the frame
    /// presented last).
    var presentFrom: MediaTime
    /// Where outputs that presented past ``presentFrom`` go on from (a restart): just after their own
    /// last frame, so that none presents a frame twice.
    var resumesAfter: [Replay.OutputID: MediaTime] = [:]
    /// The first frame is shown even while paused (a play or a seek), not for a restart.
    var showsFirstFrameWhilePaused: Bool
  }

  /// What the Replay does after a frame was presented by an output.
  struct FrameVerdict: Equatable {
    /// False: the frame belongs to a replaced graph, a removed or a failed output; it is not shown.
    var accepted = false
    /// The output presented its first frame since the play, the seek or its binding (`.presenting`).
    var firstFrame = false
    /// The output moves the position: its frame is the last frame shown, recorders advance to it.
    var movesPosition = false
    /// The output is the sound whose device steers the play's clock (``ReplayStateMachine/steeringSound(of:)``).
    var steersClock = false
    /// Gaps to report now, in the recording's order (held after a failed recording, crossed before this
    /// output took over, or found late of its track and reached by this frame).
    var gaps: [RecordingGap] = []
    /// Outputs whose channel carried nothing, now failed (O40).
    var mismatched: [Replay.OutputID] = []
    /// The position to report through `onTimeChanged`.
    var report: MediaTime?
  }

  /// How a graph's end of stream ends the play.
  enum Completion: Equatable {
    /// An older generation's, or the play is over already.
    case ignored
    /// Nothing played after a recording that failed for good (R73): the play failed with its error.
    case failed(TiError, earlyGaps: [RecordingGap])
    /// The play completed.
    case completed(Completed)
  }

  /// A completed play.
  struct Completed: Equatable {
    /// Gaps the driver crossed before it took over (reported before the end).
    var earlyGaps: [RecordingGap]
    /// Outputs failed for their channel's missing media (O40) instead of completing.
    var mismatched: [Replay.OutputID]
    /// Outputs that drained and complete with the play (O8).
    var completedOutputs: [Replay.OutputID]
    /// The end of the range, reported through `onTimeChanged` when the position was not there yet.
    var reportsEnd: Bool
    var end: MediaTime
  }
}

extension ReplayStateMachine {
  /// The error a gap's failure ends a play with when nothing after it plays (R57–R59, R73); nil for a
  /// gap that is never an error (a hole, no keyframe yet, a channel without media).
  static func failure(of gap: RecordingGap) -> TiError? {
    for reason in gap.reasons {
      switch reason {
      case .notFound: return TiError(.recordingNotFound, "the recording at \(gap.range) does not exist")
      case .downloadFailed:
        return TiError(.recordingDownloadFailed, "the recording at \(gap.range) could not be downloaded")
      case .integrityFailed, .decryptionFailed, .mediaUnreadable:
        return TiError(.recordingUnreadable, "the recording at \(gap.range) cannot be read (\(reason))")
      case .unsupportedMedia:
        return TiError(.unsupportedFormat, "the recording at \(gap.range) has an unsupported format")
      case .unknown, .noKeyFrame, .noRecording, .trackUnavailable: continue
      }
    }
    return nil
  }
}

extension ReplayStateMachine {
  /// The sound whose device steers the play's clock — one sound steers, the one heard: the audio
  /// candidate, or once it failed (its channel carried nothing, O40, or its device failed) the first audio
  /// output that presented after that (``soundInStead``; a graph built again would still judge the failed
  /// one's track); nil when no sound is a candidate, or none presents in the failed one's stead.
  func steeringSound(of candidates: [Replay.OutputID]) -> Replay.OutputID? {
    guard let candidate = audioCandidate(of: candidates) else { return nil }
    guard failed(candidate) else { return candidate }
    return soundInStead.flatMap { presents($0) ? $0 : nil }
  }
  /// The sound among `candidates` (the first audio output, whose track the play judges).
  func audioCandidate(of candidates: [Replay.OutputID]) -> Replay.OutputID? {
    candidates.first { id in outputs.contains { $0.id == id && $0.track.kind == .audio } }
  }

}

extension ReplayStateMachine {
  /// Whether `gap`, crossed by an output before it took the position over, is not behind the position
  /// (no position yet: a play whose first driver presented nothing). One behind it is not reported when
  /// the output drives later (the last picture left a play with sound whose audio joined at a gap).
  func ahead(_ gap: RecordingGap) -> Bool { position.map { gap.range.end > $0 } ?? true }
}

extension ReplayStateMachine {
  /// `gaps`, found late of the track of output `owner`, judged from now on (the first output of its kind
  /// joins, or takes the position over in another's stead), are crossed by `owner` before its first
  /// frame at or after each end — as in a graph that judged the track all along, where the copy the
  /// output's branch crosses comes behind what its edges hold (that copy is then dropped,
  /// ``crossed(_:by:candidates:generation:)``).
  mutating func expect(late gaps: [RecordingGap], of owner: Replay.OutputID) {
    lateGaps += gaps.map { ($0, owner) }
  }

  /// Which of `candidates` (the first video output, the first audio output) moves the position and
  /// reports the gaps: the first that has not failed, unless it has presented nothing since the play or
  /// the seek while a later one has presented for ``PlaybackTimeline/prerollLimit`` of media — then that
  /// one (O40: the video's channel may carry nothing, and the audio goes on). So the audio's first
  /// frames before the video's do not take the position, nor a hole's report, from the video.
  func driver(of candidates: [Replay.OutputID]) -> Replay.OutputID? {
    let alive = candidates.filter { !failed($0) }
    guard let first = alive.first else { return nil }
    if presents(first) { return first }
    for other in alive.dropFirst() {
      guard let span = presentedSpan[other], let played = try? span.latest - span.first else { continue }
      if played >= PlaybackTimeline.prerollLimit { return other }
    }
    return first
  }

  /// The late gaps of output `id`, which leaves: crossed by `heir` from now on (of the same track), or
  /// forgotten.
  mutating func handOnLateGaps(of id: Replay.OutputID, to heir: Replay.OutputID?) {
    if let heir {
      for index in lateGaps.indices where lateGaps[index].owner == id { lateGaps[index].owner = heir }
    } else {
      lateGaps.removeAll { $0.owner == id }
    }
  }

  /// Output `id` is about to present a frame of `time`: its late gaps that end at or before it, crossed
  /// now (those to report now).
  mutating func reached(_ time: MediaTime, by id: Replay.OutputID, candidates: [Replay.OutputID]) -> [RecordingGap] {
    let due = lateGaps.filter { $0.owner == id && $0.gap.range.end <= time }
    guard !due.isEmpty else { return [] }
    lateGaps.removeAll { $0.owner == id && $0.gap.range.end <= time }
    return due.flatMap { crossed($0.gap, by: id, candidates: candidates, generation: generation) }
  }
}

extension ReplayStateMachine {
  /// What the graph of the active play starts from: the target (a play, a seek), or the position with
  /// the outputs already playing going on after the frame they presented last (`restarting`): the
  /// driver's, or their own where they presented past it (the sound handed ahead of the picture,
  /// another view ahead of it); nil without an active play or with nothing to feed (no output, no
  /// recorder).
  func start(restarting: Bool, recording: Bool) -> Start? {
    guard active, !tooLarge, let play, !outputs.isEmpty || recording else { return nil }
    let position = restarting && positionFollowsTarget ? self.position : nil
    let from = position ?? target
    var outputs = self.outputs
    for index in outputs.indices {
      if let joinsAt = outputs[index].joinsAt { outputs[index].joinsAt = max(joinsAt, from) }
    }
    // A restart goes on just after the frame presented last (a microsecond later: nothing is lost to
    // rounding).
    let next = position.map { $0.advanced(by: .microseconds(1), notAfter: play.end) }
    // (presentedSpan is emptied at each play and seek: on a restart it holds what this target played,
    // also when the driver has not presented yet, the sound handed ahead or first.)
    var resumesAfter: [Replay.OutputID: MediaTime] = [:]
    for output in outputs where restarting {
      guard let latest = presentedSpan[output.id]?.latest, latest >= next ?? from else { continue }
      resumesAfter[output.id] = latest.advanced(by: .microseconds(1), notAfter: play.end)
    }
    return Start(
      range: MediaRange(start: from, end: play.end), play: play, outputs: outputs, speed: speed, paused: paused,
      generation: generation, presentFrom: next ?? from, resumesAfter: resumesAfter,
      showsFirstFrameWhilePaused: position == nil)
  }
}

extension MediaRange {
  /// Whether a gap of `range` was reported already as this range: the same stretch, or a part of it (a
  /// graph rebuilt inside it clamps it at its start), or one it overlaps that the position (`passed`)
  /// left behind (a copy found late).
  func covers(_ range: MediaRange, passed position: MediaTime?) -> Bool {
    (start <= range.start && range.end <= end) || (overlaps(range) && position.map { range.end <= $0 } == true)
  }
}
