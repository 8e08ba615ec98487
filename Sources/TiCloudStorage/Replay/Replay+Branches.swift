import Nodes
import PipelineGraph

/// Outputs joining and leaving a running graph, as branches on a GStreamer `tee`'s request pads
/// (`Pipeline.attach(_:)`, `Pipeline.detach(_:)`): the commands' part of it (what they hang on: `Joints`).
extension Replay {
  /// Hangs output `output`'s branch on the running graph (inside a command): true when it joined, false
  /// when the graph cannot take it without being rebuilt — nothing presents yet, or the play is paused
  /// and the graph's history no longer holds what shows the position. A video branch presents from the
  /// first keyframe at or after its `joinsAt` (the position, O18), the history's when it kept one; an
  /// audio branch starts at the position itself, from what the history kept (every audio packet decodes
  /// alone); joining a paused play a branch shows the position's frame at once, decoded from the history
  /// (what a graph built again would show). The first audio output of a play of video becomes a candidate
  /// after the video; the first video output of a play of audio alone, before the audio (it drives from
  /// its first frame on), and the audio branches become the sound beside a picture (muted off 1×,
  /// following it). The gap detector and the timeline follow a first output's track from then on, as in a
  /// graph built with it. Nothing is read again.
  func join(_ output: ReplayStateMachine.Output, _ state: inout Control) -> Bool {
    guard let graph = state.graph, graph.presents, let attachment = state.attachments[output.id] else { return false }
    let joints = graph.joints
    let firstOfKind = !joints.timedKinds.contains(output.track.kind)
    // A first picture joins a play of audio alone whose graph lets all video through (its history holds
    // the next keyframe); a first sound, a play of video.
    // (A picture's track the router dropped packets of from the position on — let through only since the
    // last picture left — cannot: neither the history nor the gap detector has what came before.)
    let presentFrom = output.joinsAt ?? state.rules.target
    let joinsAsFirst =
      output.track.kind == .audio
      ? joints.hasVideo
      : joints.router.passesAll(output.track, from: presentFrom, generation: state.rules.generation - graph.base)
    guard !firstOfKind || joinsAsFirst else { return false }
    let start = BranchStart(
      speed: state.rules.speed, paused: state.rules.paused, presentFrom: presentFrom,
      showsFirstFrameWhilePaused: state.rules.paused, levels: state.levels)
    // While paused nothing flows (the pacers hold the edges full): the branch shows the position only
    // from the history, read again when the branch starts (on the executor, before the next packet).
    if start.paused,
      joints.history?.holds(
        output.track, decodableAt: start.presentFrom, generation: state.rules.generation - graph.base) != true
    {
      return false
    }
    do {
      var branch: Branch?
      try graph.pipeline.attach { pipeline in
        branch = try connectBranch(
          for: Binding(output: output, attachment: attachment), of: graph, start: start, in: pipeline)
      }
      guard let branch else { return false }
      if firstOfKind {
        // The gaps found among what the history holds come behind it: the output crosses each before its
        // first frame at or after the gap's end.
        state.rules.expect(late: judge(output.track, from: start.presentFrom, in: graph), of: output.id)
        if output.track.kind == .video {
          // The picture drives from its first frame on (the sound until then: at that frame the sound
          // follows it, `Joints.pictureCame(by:)`). The router goes on letting every picture through: a
          // channel cut now and routed again later would start mid-picture from the history.
          joints.candidates.insert(output.id, at: 0)
          joints.soundYields = true
        } else {
          joints.candidates.append(output.id)
        }
        joints.timedKinds.insert(output.track.kind)
      }
      graph.joined(output.id, branch)
    } catch {
      // A branch that cannot be built here (its decoder, a stopped graph) is built with a new graph.
      return false
    }
    joints.router.select(Self.routedTracks(state))
    // The watch judges the stretch read ahead of the position from what it noted (O40: 5 s of playback).
    if let missing = joints.watch.watch(output.track, since: start.presentFrom) {
      state.rules.channelMissing(output.track, noticedAt: missing.time, generation: graph.base + missing.generation)
    }
    return true
  }

  /// Starts judging track `track` in `graph` from `position` on (inside a command, before a branch
  /// plays it from there): the gap detector follows it from where its packets passed unaccounted so far,
  /// and the stretches it saw missing among them from the position on are its gaps before that. The
  /// timeline counts the track as missing before the position (the holes skipped already stay skipped)
  /// and in those stretches, as having media or gaps after. (When none of its packets passed the
  /// detector yet, the track counts as missing until the detector judges it.) Returns the gaps sent of
  /// those stretches.
  @discardableResult
  private func judge(_ track: TrackID, from position: MediaTime, in graph: Graph) -> [RecordingGap] {
    let joints = graph.joints
    // Sent as gaps too: the branch crosses them as in a graph built with the track (a picture that
    // drives reports them).
    let found = joints.detector.announceMissing(of: track, from: position)
    let followed = track.kind == .video ? joints.detector.follow(video: track) : joints.detector.follow(audio: track)
    let now = environment.clock.now
    if let found {
      joints.timeline.add(track, judgedFrom: position, missing: found.missing, now: now)
    } else {
      joints.timeline.add(track, judgedFrom: followed ?? position, now: now)
    }
    return found?.gaps ?? []
  }

  /// Cuts output `id`'s branch from the running graph (inside a command): true when it left, false when
  /// the graph must be rebuilt without it. A candidate (an output that may drive the position or whose
  /// track is judged) hands its place to its successor (``succession(of:track:_:_:)``): of another track
  /// (another channel's sound or picture), that track is judged from the position on in the leaving
  /// one's stead (the gap detector follows it, the timeline counts it for holes); with none, the sound
  /// leaves the play (neither judges its track any more, as in a graph built without it); the last
  /// picture hands the play to the sound beside it (unmuted, pacing the play alone, the picture's track
  /// no longer judged: as in a play of audio alone, whose router lets every picture through). Otherwise
  /// the graph is rebuilt. (While a picture presents, the router stops letting a left picture's channel
  /// through unless a recorder keeps it: a picture of it bound later joins at the next keyframe read
  /// after it is let through again.)
  func cut(_ id: OutputID, track: TrackID, _ state: inout Control) -> Bool {
    guard let graph = state.graph, let branch = graph.joints.branches[id] else { return false }
    let joints = graph.joints
    var handover: (place: Int, successor: Succession)?
    if let place = joints.candidates.firstIndex(of: id) {
      guard let successor = Self.succession(of: id, track: track, joints, state) else { return false }
      handover = (place, successor)
    }
    let position = state.rules.recordingStart ?? state.rules.target
    if case let (_, .waitingHeir(heir))? = handover, !regate(heir, at: position, in: graph, &state) { return false }
    do {
      try graph.pipeline.detach(branch.nodes)
    } catch {
      return false
    }
    // The gaps found late of the leaving output's track: crossed by its heir of the same track, or forgotten.
    var sameTrackHeir: OutputID?
    switch handover {
    case let (_, .heir(heir))? where heir.track == track: sameTrackHeir = heir.id
    case let (_, .waitingHeir(heir))?: sameTrackHeir = heir.id
    default: break
    }
    state.rules.handOnLateGaps(of: id, to: sameTrackHeir)
    switch handover {
    case let (place, .heir(heir))?:
      joints.candidates[place] = heir.id
      if heir.track != track {
        // Judged first, then the other retired: in between the holes only shrink (a pacer reading the
        // mapping then waits; it never skips what the new track plays).
        if track.kind == .video {
          joints.detector.unfollow(video: track)
        } else {
          joints.detector.unfollow(audio: track)
        }
        // Gaps found late reach the heir behind what its edges hold: it crosses each before its first frame
        // at or after the gap's end.
        state.rules.expect(late: judge(heir.track, from: position, in: graph), of: heir.id)
        joints.timeline.retire(track, from: position, now: environment.clock.now)
      }
    case let (place, .waitingHeir(heir))?:
      joints.candidates[place] = heir.id
    case (_, .nobody)?:
      joints.candidates.removeAll { $0 == id }
      joints.timedKinds.remove(.audio)
      joints.detector.unfollow(audio: track)
      joints.timeline.retire(track, from: position, now: environment.clock.now)
    case let (place, .sound)?:
      joints.candidates.remove(at: place)
      joints.timedKinds.remove(.video)
      joints.soundYields = false
      joints.detector.unfollow(video: track)
      joints.timeline.retire(track, from: position, now: environment.clock.now)
      for branch in joints.branches.values { branch.soundRole?(false) }
      // From here on as a graph built for audio alone: every picture passes, and one bound later joins
      // at the next keyframe the history keeps — once the router let all of its channel through from a
      // keyframe before the position on (`TrackRouter.passesAll`; until then the graph is rebuilt).
      joints.router.passWhole(.video)
    case nil:
      break
    }
    graph.left(id)
    if !state.rules.outputs.contains(where: { $0.track == track }) { graph.joints.watch.unwatch(track) }
    joints.router.select(Self.routedTracks(state))
    return true
  }

  /// Who takes a leaving candidate's place.
  private enum Succession {
    /// This output.
    case heir(ReplayStateMachine.Output)
    /// Nobody: the last audio output left beside a picture that drives; the sound leaves the play.
    case nobody
    /// The sound: the last picture left a play with sound, which drives on alone (as in a play of audio
    /// alone).
    case sound
    /// This picture of the same track, whose branch waits for its first keyframe: hung on again to show
    /// the position from the history (``regate(_:at:in:_:)``).
    case waitingHeir(ReplayStateMachine.Output)
  }

  /// Who takes candidate `id`'s place (its output just unbound), nil when the graph must be rebuilt.
  /// An audio candidate leaving a play that a presenting video candidate drives (the picture drives after
  /// a rebuild as well: nothing else changes hands): the first audio output left — the one a graph built
  /// again would judge — when its branch is in the graph and has not failed, nobody when none is left.
  /// Otherwise another output of its track whose branch presents already (same gap detector, same
  /// timeline, frames at the same instants: the position goes on from the heir's next frame); without
  /// one, the first output of its kind left: a picture of its track whose branch waits for its first
  /// keyframe is hung on again to show the position; otherwise the first output of its kind left when it presents (another channel's: a camera's other lens,
  /// or another microphone driving a play of audio alone, judged from the position on in its stead), or,
  /// for a picture, the sound when no picture is left and an audio candidate's branch is in the graph and
  /// has not failed (it may not have played yet: it takes the time over from its first frame).
  private static func succession(
    of id: OutputID, track: TrackID, _ joints: Joints, _ state: Control
  ) -> Succession? {
    if track.kind == .audio, let driver = state.rules.driver(of: joints.candidates), driver != id,
      state.rules.presents(driver), state.rules.outputs.first(where: { $0.id == driver })?.track.kind == .video
    {
      guard let heir = state.rules.outputs.first(where: { $0.track.kind == .audio }) else { return .nobody }
      guard joints.branches[heir.id] != nil, !state.rules.failed(heir.id) else { return nil }
      return .heir(heir)
    }
    let sameTrack = state.rules.outputs.filter {
      $0.track == track && !joints.candidates.contains($0.id) && joints.branches[$0.id] != nil
        && !state.rules.failed($0.id)
    }
    if let heir = sameTrack.first(where: { state.rules.presents($0.id) }) { return .heir(heir) }
    guard let other = state.rules.outputs.first(where: { $0.track.kind == track.kind }) else {
      guard track.kind == .video else { return nil }
      // The last picture: the sound beside it drives on alone (from its first frame, if it has not played).
      let sound = joints.candidates.first { candidate in
        candidate != id && joints.branches[candidate] != nil && !state.rules.failed(candidate)
          && state.rules.outputs.first(where: { $0.id == candidate })?.track.kind == .audio
      }
      return sound == nil ? nil : .sound
    }
    // The first picture left — the one a graph built again would make the driver — joined on the same
    // track and waits for its first keyframe (a seek or its first frame clears `joinsAt`; after a seek every
    // branch starts afresh from the keyframe before the target, as one that presents).
    if track.kind == .video, other.joinsAt != nil, sameTrack.contains(where: { $0.id == other.id }) {
      return .waitingHeir(other)
    }
    guard joints.branches[other.id] != nil, state.rules.presents(other.id) else { return nil }
    return .heir(other)
  }

  /// Hangs picture `heir`'s branch, which waits for its first keyframe, on `graph` again to show the
  /// position (inside a command, the position's driver of its track leaving at `position`): decoded from
  /// the history's keyframe at or before it, from the frame after it on — or, paused, its own frame, as
  /// a picture bound while paused shows it. The branch that waited is cut (what its edges held goes with
  /// it). False when the history no longer holds what shows the position, or the branch cannot be built
  /// (the graph is rebuilt then). Left waiting, the heir showed nothing until its keyframe came: the
  /// position stood still up to a group of pictures (a graph built again jumped to that keyframe).
  private func regate(
    _ heir: ReplayStateMachine.Output, at position: MediaTime, in graph: Graph, _ state: inout Control
  ) -> Bool {
    guard let waiting = graph.joints.branches[heir.id], let attachment = state.attachments[heir.id],
      let play = state.rules.play
    else { return false }
    let paused = state.rules.paused
    // After the frame presented last; the target itself when nothing presented it yet (a play's or a
    // seek's first frame to come), as a graph built again would start.
    let presented = state.rules.positionFollowsTarget && state.rules.position != nil
    let from = paused || !presented ? position : position.advanced(by: .microseconds(1), notAfter: play.end)
    let generation = state.rules.generation - graph.base
    guard graph.joints.history?.holds(heir.track, decodableAt: from, generation: generation) == true else {
      return false
    }
    var output = heir
    output.joinsAt = from
    let start = BranchStart(
      speed: state.rules.speed, paused: paused, presentFrom: from, showsPosition: true,
      showsFirstFrameWhilePaused: paused, levels: state.levels)
    do {
      try graph.pipeline.detach(waiting.nodes)
      graph.left(heir.id)
      var branch: Branch?
      try graph.pipeline.attach { pipeline in
        branch = try connectBranch(
          for: Binding(output: output, attachment: attachment), of: graph, start: start, in: pipeline)
      }
      guard let branch else { return false }
      graph.joined(heir.id, branch)
    } catch {
      return false
    }
    // The gaps ahead that the cut branches' edges held go with them: the heir crosses each before its first
    // frame at or after the gap's end (the timeline skips the holes among them), as a joining output does.
    let ahead = graph.joints.detector.sent(of: heir.track, endingAfter: position)
    for gap in ahead { graph.joints.timeline.note(gap) }
    state.rules.expect(late: ahead, of: heir.id)
    state.rules.takeOver(heir.id)
    return true
  }

  /// Hands `recorder` (just added to the recorders, inside the command) to the running graph's tap: true
  /// when it joined — the tap kept every packet from its start on, the router let every packet of its
  /// tracks from its start on through (``TrackRouter/passesAll(_:from:generation:)``), and a recorder of
  /// audio finds the transcoder in place; false when the graph must be rebuilt for it (T16: it starts at
  /// the first keyframe at or after its start, which a rebuilt graph reads again).
  func join(_ recorder: ReplayRecorder, _ state: Control) -> Bool {
    guard let graph = state.graph else { return false }
    let joints = graph.joints
    // The pipeline generation the graph is in once the flushes of the seeks made so far have run.
    let generation = state.rules.generation - graph.base
    guard recorder.tracks.allSatisfy({ joints.router.passesAll($0, from: recorder.startsAt, generation: generation) }),
      recorder.audioTrack == nil || joints.transcodesAudio
    else { return false }
    return joints.tap.join(recorder, generation: generation)
  }

  /// The tracks a graph's router lets through: those of the bound outputs and the recorders.
  static func routedTracks(_ state: Control) -> Set<TrackID> {
    Set(state.rules.outputs.map(\.track)).union(recordedTracks(state))
  }

  /// The tracks the recorders need.
  static func recordedTracks(_ state: Control) -> Set<TrackID> {
    state.recorders.reduce(into: Set<TrackID>()) { $0.formUnion($1.recorder.tracks) }
  }
}
