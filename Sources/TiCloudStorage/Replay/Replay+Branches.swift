import Nodes
import PipelineGraph

/// Outputs joining and leaving a running graph, as branches on a GStreamer `tee`'s request pads
/// (`Pipeline.attach(_:)`, `Pipeline.detach(_:)`): what they hang on, and the commands' part of it.
extension Replay {
  /// What the outputs' branches of one graph hang on and share, and the branches themselves: confined to
  /// the executor (the commands that join or cut a branch, and the graph's error handler, run there).
  final class Joints: @unchecked Sendable {
    let router: TrackRouter
    /// Turns missing media of the timed kinds' tracks into gaps.
    let detector: GapDetector
    /// What the branches hang on: it keeps what a branch joining a paused play starts from (none in a
    /// graph built without outputs).
    let history: PacketHistory?
    let watch: ChannelWatch
    /// The recorders' tap, and whether an audio transcoder feeds it (a recorder of audio needs one).
    let tap: RecorderTap
    let transcodesAudio: Bool
    /// One clock anchor for every output.
    let timeline: PlaybackTimeline
    /// The outputs whose frames may move the position (the first video output, else the first audio);
    /// a driver that leaves hands its place to another output of its track, and the audio one beside
    /// a picture that drives leaves the list (``Replay/cut(_:track:_:)``).
    var candidates: [OutputID]
    /// The kinds of the candidates, whose tracks the gap detector and the timeline follow: audio joins
    /// and leaves them while video plays; video joining a play of audio alone would take the position
    /// over.
    var timedKinds: Set<TrackKind>
    /// The graph's outputs include a video one: audio is muted off 1× and the picture paces the play.
    var hasVideo: Bool { timedKinds.contains(.video) }
    var branches: [OutputID: Branch] = [:]
    /// The tracks the router began to let through while the graph ran, with the flush generation then:
    /// the tap has nothing of them from before, so a recorder of one cannot join in that generation.
    var routedLate: [TrackID: Int] = [:]
    /// The nodes of branches cut from the graph: a failure of theirs before they stop ends them quietly.
    var departed: Set<ObjectIdentifier> = []

    init(
      router: TrackRouter, detector: GapDetector, history: PacketHistory?, watch: ChannelWatch, tap: RecorderTap,
      transcodesAudio: Bool, timeline: PlaybackTimeline, candidates: [OutputID], timedKinds: Set<TrackKind>
    ) {
      self.router = router
      self.detector = detector
      self.history = history
      self.watch = watch
      self.tap = tap
      self.transcodesAudio = transcodesAudio
      self.timeline = timeline
      self.candidates = candidates
      self.timedKinds = timedKinds
    }

    /// The output whose branch holds the node with `id`.
    func owner(of id: ObjectIdentifier) -> OutputID? {
      branches.first { $0.value.nodes.contains { ObjectIdentifier($0) == id } }?.key
    }
  }

  /// Hangs output `output`'s branch on the running graph (inside a command): true when it joined, false
  /// when the graph cannot take it without being rebuilt — nothing presents yet, the output is the first
  /// video output of a play of audio alone (the picture would take the position over and mute the
  /// sound off 1×), or the play is paused and the graph's history no longer holds what shows the
  /// position. A video branch takes what the graph reads from now on and presents from the first keyframe
  /// at or after its `joinsAt` (the position, O18); an audio branch starts at the position itself, from
  /// what the history kept (every audio packet decodes alone); joining a paused play a branch shows the
  /// position's frame at once, decoded from the history (what a graph built again would show). The first
  /// audio output of a play of video becomes a candidate after the video, and the gap detector and the
  /// timeline follow its track from then on, as in a graph built with it. Nothing is read again.
  func join(_ output: ReplayStateMachine.Output, _ state: inout Control) -> Bool {
    guard let graph = state.graph, graph.presents, let attachment = state.attachments[output.id] else { return false }
    let joints = graph.joints
    let firstOfKind = !joints.timedKinds.contains(output.track.kind)
    guard !firstOfKind || (output.track.kind == .audio && joints.hasVideo) else { return false }
    let start = BranchStart(
      speed: state.rules.speed, paused: state.rules.paused, presentFrom: output.joinsAt ?? state.rules.target,
      showsFirstFrameWhilePaused: true, levels: state.levels)
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
        // Before the branch's first packet (the gate hands the history on as it starts, on this
        // executor, after this command): the detector judges the track's gaps from where its packets
        // passed unaccounted so far, and the silences it saw among them from the position on (what the
        // gate plays from the history) are its gaps before that. The timeline counts the track as
        // missing before the position (the holes skipped already stay skipped) and in those silences,
        // as having media or gaps after. (Without the history's packets from the position, the track
        // counts as missing until the detector judges it.)
        let silences = joints.detector.silences(of: output.track, from: start.presentFrom)
        let passed = joints.detector.follow(audio: output.track) ?? start.presentFrom
        let kept = joints.history?.holds(
          output.track, decodableAt: start.presentFrom, generation: state.rules.generation - graph.base)
        if kept == true {
          joints.timeline.add(output.track, judgedFrom: start.presentFrom, missing: silences)
        } else {
          joints.timeline.add(output.track, judgedFrom: passed)
        }
        joints.candidates.append(output.id)
        joints.timedKinds.insert(output.track.kind)
      }
      graph.joined(output.id, branch)
    } catch {
      // A branch that cannot be built here (its decoder, a stopped graph) is built with a new graph.
      return false
    }
    Self.route(Self.routedTracks(state), in: graph, state)
    // The watch judges the stretch read ahead of the position from what it noted (O40: 5 s of playback).
    if let missing = joints.watch.watch(output.track, since: start.presentFrom) {
      state.rules.channelMissing(output.track, noticedAt: missing.time, generation: graph.base + missing.generation)
    }
    return true
  }

  /// Cuts output `id`'s branch from the running graph (inside a command): true when it left, false when
  /// the graph must be rebuilt without it. An output that may drive the position hands its place to
  /// another output of its track whose branch presents already (same gap detector, same timeline, frames
  /// at the same instants: the position goes on from the heir's next frame). Without one, the last audio
  /// output beside a picture that drives leaves too: from the position on, the gap detector no longer
  /// judges its track and the timeline no longer counts it for holes, as in a graph built without it.
  /// Otherwise the graph is rebuilt (another kind would drive: audio unmuted, pacing the play).
  func cut(_ id: OutputID, track: TrackID, _ state: inout Control) -> Bool {
    guard let graph = state.graph, let branch = graph.joints.branches[id] else { return false }
    let joints = graph.joints
    var retires = false
    if let place = joints.candidates.firstIndex(of: id) {
      let heir = state.rules.outputs.first {
        $0.track == track && !joints.candidates.contains($0.id) && joints.branches[$0.id] != nil
          && state.rules.presents($0.id)
      }
      if let heir {
        joints.candidates[place] = heir.id
      } else {
        guard Self.leavesBesideVideo(id, track: track, joints.candidates, state) else { return false }
        retires = true
      }
    }
    do {
      try graph.pipeline.detach(branch.nodes)
    } catch {
      return false
    }
    if retires {
      joints.candidates.removeAll { $0 == id }
      joints.timedKinds.remove(.audio)
      joints.detector.unfollow(audio: track)
      joints.timeline.retire(
        track, from: state.rules.recordingStart ?? state.rules.target, now: environment.clock.now)
    }
    graph.left(id)
    graph.joints.departed.formUnion(branch.nodes.map { ObjectIdentifier($0) })
    if !state.rules.outputs.contains(where: { $0.track == track }) { graph.joints.watch.unwatch(track) }
    Self.route(Self.routedTracks(state), in: graph, state)
    return true
  }

  /// Whether candidate `id`, an audio output without an heir, is the last audio output and leaves the
  /// play to a video candidate that drives it and presents (it would drive after a rebuild as well:
  /// nothing else changes hands). Another audio output left (of another channel, or not presenting yet)
  /// would become the audio a rebuilt graph judges: the graph is rebuilt.
  private static func leavesBesideVideo(
    _ id: OutputID, track: TrackID, _ candidates: [OutputID], _ state: Control
  ) -> Bool {
    guard track.kind == .audio, !state.rules.outputs.contains(where: { $0.track.kind == .audio }),
      let driver = state.rules.driver(of: candidates), driver != id, state.rules.presents(driver),
      state.rules.outputs.first(where: { $0.id == driver })?.track.kind == .video
    else { return false }
    return true
  }

  /// Lets `tracks` through `graph`'s router, noting those it did not let through before (inside a
  /// command).
  private static func route(_ tracks: Set<TrackID>, in graph: Graph, _ state: Control) {
    let joints = graph.joints
    for track in tracks where !joints.router.passes(track) {
      joints.routedLate[track] = state.rules.generation - graph.base
    }
    joints.router.select(tracks)
  }

  /// Hands `recorder` (just added to the recorders, inside the command) to the running graph's tap: true
  /// when it joined — the tap kept every packet from its start on, its tracks were routed since the
  /// current flush generation began, and a recorder of audio finds the transcoder in place; false when
  /// the graph must be rebuilt for it (T16: it starts at the first keyframe at or after its start, which a
  /// rebuilt graph reads again).
  func join(_ recorder: ReplayRecorder, _ state: Control) -> Bool {
    guard let graph = state.graph else { return false }
    let joints = graph.joints
    // The pipeline generation the graph is in once the flushes of the seeks made so far have run.
    let generation = state.rules.generation - graph.base
    guard recorder.tracks.allSatisfy(joints.router.passes),
      !recorder.tracks.contains(where: { joints.routedLate[$0] == generation }),
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
