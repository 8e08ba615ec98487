import PipelineGraph

/// Passes the packets of the selected tracks (kind + channel id), every track of the kinds it passes
/// whole, and every event; drops the rest. A replay's router with outputs selects their channels and
/// passes all audio (a few kilobytes a second): an audio output that joins then starts at the position,
/// from what the graph kept, instead of from what the source reads next.
///
/// Confined to its pipeline's executor: the tracks it lets through change there (``select(_:)``) when an
/// output joins or leaves a running graph.
public final class TrackRouter: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits the selected packets.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The tracks let through.
  public private(set) var tracks: Set<TrackID>
  /// The kinds whose every track is let through, selected or not.
  public private(set) var kinds: Set<TrackKind>
  /// What was dropped of each track in the current flush generation.
  private var dropped: [TrackID: Dropped] = [:]
  /// The tracks let through again since they were dropped whose first decodable packet has not passed
  /// yet (empty unless a selection changed while packets of them were dropped: nothing to look up per
  /// packet otherwise).
  private var resuming: Set<TrackID> = []
  /// The flush generation `dropped` belongs to.
  private var generation = 0

  /// What was dropped of one track.
  private struct Dropped {
    /// The latest presentation time of a packet dropped.
    var until: MediaTime
    /// The presentation time of the first decodable packet (a keyframe; any audio packet) that passed
    /// after the last one dropped.
    var resumedAt: MediaTime?
  }

  /// Creates a router for `tracks`, and for every track of `kinds`.
  public init(name: String = "TrackRouter", tracks: Set<TrackID>, kinds: Set<TrackKind> = []) {
    self.name = name
    self.tracks = tracks
    self.kinds = kinds
  }

  /// Whether packets of `track` pass.
  public func passes(_ track: TrackID) -> Bool { tracks.contains(track) || kinds.contains(track.kind) }

  /// Lets `tracks` through from the next packet on (on the pipeline's executor).
  public func select(_ tracks: Set<TrackID>) {
    self.tracks = tracks
    noteResuming()
  }

  /// Lets every track of `kind` through from the next packet on, selected or not (on the pipeline's
  /// executor); false when it did already.
  @discardableResult
  public func passWhole(_ kind: TrackKind) -> Bool {
    defer { noteResuming() }
    return kinds.insert(kind).inserted
  }

  /// The tracks dropped before that pass now and wait for their first decodable packet.
  private func noteResuming() {
    resuming = Set(dropped.lazy.filter { $0.value.resumedAt == nil && self.passes($0.key) }.map(\.key))
  }

  /// Whether what passed of `track` in flush generation `generation` is whole from `time` on: it passes
  /// now, none of its packets at or after `time` was dropped, and, if some were before, a decodable
  /// packet at or before `time` passed after them — what a branch or a recorder joining at `time` needs
  /// downstream (the packets dropped are nowhere; a picture's packets after them that come before a
  /// keyframe decode to nothing, and the gap detector counts them missing). True for a generation whose
  /// flush has not reached the router yet (it drops nothing of a track it passes then).
  public func passesAll(_ track: TrackID, from time: MediaTime, generation: Int) -> Bool {
    guard passes(track) else { return false }
    guard generation == self.generation else { return generation > self.generation }
    guard let dropped = dropped[track] else { return true }
    return dropped.until < time && dropped.resumedAt.map { $0 <= time } == true
  }

  /// Passes the packet when its track is selected or of a kind passed whole.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    let track = input.track
    guard passes(track) else {
      // The latest time dropped, whatever the order (a track may be dropped, let through and dropped
      // again; B-frames come in decode order).
      dropped[track] = Dropped(until: max(dropped[track]?.until ?? input.time, input.time))
      return
    }
    if !resuming.isEmpty, input.isKeyframe || track.kind == .audio, resuming.remove(track) != nil {
      dropped[track]?.resumedAt = input.time
    }
    context.emit(input)
  }

  /// A flush starts the accounting of what was dropped afresh.
  public func flush(context: NodeContext<EncodedPacket>) {
    dropped = [:]
    resuming = []
    generation = context.generation
  }
}
