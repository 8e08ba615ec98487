import Nodes
import PipelineGraph

/// What the outputs' branches of one of a Replay's graphs hang on and share (``Replay/Joints``).
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
    /// a picture that drives to the first audio output left, or leaves the list with the last; the last
    /// picture leaves it to the sound (``Replay/cut(_:track:_:)``).
    var candidates: [OutputID]
    /// The kinds of the candidates, whose tracks the gap detector and the timeline follow: audio joins
    /// and leaves them while video plays; video joins a play of audio alone (and takes the position
    /// over), and leaves a play with sound (which drives on alone).
    var timedKinds: Set<TrackKind>
    /// The graph's outputs include a video one: audio is muted off 1× and the picture paces the play.
    var hasVideo: Bool { timedKinds.contains(.video) }
    var branches: [OutputID: Branch] = [:]
    /// The nodes of branches cut from the graph: a failure of theirs before they stop ends them quietly.
    var departed: Set<ObjectIdentifier> = []
    /// A first picture joined a play of audio alone and has not shown a frame yet: the sound paces the
    /// play until it does.
    var soundYields = false

    /// Output `id`'s picture showed a frame: when it is the picture that joined a play of audio alone
    /// (the first candidate), the audio branches become the sound beside it (muted off 1×, handed ahead
    /// to a device that holds it, the play's clock following the sound the timeline follows), as if built
    /// with it. Until
    /// then the sound drove the position, as before.
    func pictureCame(by id: OutputID) {
      guard soundYields, candidates.first == id else { return }
      soundYields = false
      for branch in branches.values { branch.soundRole?(true) }
    }

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
}
