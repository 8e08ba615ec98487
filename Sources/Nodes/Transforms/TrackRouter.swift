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
  /// The latest presentation time of a dropped packet, per track, in the current flush generation.
  private var droppedUntil: [TrackID: MediaTime] = [:]
  /// The flush generation `droppedUntil` belongs to.
  private var generation = 0

  /// Creates a router for `tracks`, and for every track of `kinds`.
  public init(name: String = "TrackRouter", tracks: Set<TrackID>, kinds: Set<TrackKind> = []) {
    self.name = name
    self.tracks = tracks
    self.kinds = kinds
  }

  /// Whether packets of `track` pass.
  public func passes(_ track: TrackID) -> Bool { tracks.contains(track) || kinds.contains(track.kind) }

  /// Lets `tracks` through from the next packet on (on the pipeline's executor).
  public func select(_ tracks: Set<TrackID>) { self.tracks = tracks }

  /// Lets every track of `kind` through from the next packet on, selected or not (on the pipeline's
  /// executor); false when it did already.
  @discardableResult
  public func passWhole(_ kind: TrackKind) -> Bool { kinds.insert(kind).inserted }

  /// Whether every packet of `track` from `time` on passes in flush generation `generation`: it passes
  /// now and none of its packets at or after `time` was dropped (what a branch or a recorder joining
  /// there needs downstream: the packets that came before it was let through are nowhere). True for a
  /// generation whose flush has not reached the router yet (it drops nothing of a track it passes then).
  public func passesAll(_ track: TrackID, from time: MediaTime, generation: Int) -> Bool {
    guard passes(track) else { return false }
    guard generation == self.generation else { return generation > self.generation }
    return droppedUntil[track].map { $0 < time } ?? true
  }

  /// Passes the packet when its track is selected or of a kind passed whole.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    if passes(input.track) { return context.emit(input) }
    // In decode order: once a track passes, every packet after it does, so the latest time dropped is
    // where what passed begins (a B-frame shown before a later dropped one was dropped before it).
    droppedUntil[input.track] = max(droppedUntil[input.track] ?? input.time, input.time)
  }

  /// A flush starts the accounting of what was dropped afresh.
  public func flush(context: NodeContext<EncodedPacket>) {
    droppedUntil = [:]
    generation = context.generation
  }
}
