import PipelineGraph

/// Passes one keyframe of a track per `interval` of a range — the first in each — and nothing else of
/// that track: what a decoder needs for one picture per interval (scrub previews of a day, one picture
/// a minute, decode 1,440 keyframes instead of 43,200). Other tracks' packets are dropped; events pass.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class KeyframeSampler: Node {
  /// Encoded packets.
  public typealias Input = EncodedPacket
  /// The keyframes kept.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The track sampled.
  public let track: TrackID
  /// Where the intervals start.
  public let start: MediaTime
  /// The length of one interval.
  public let interval: MediaDuration
  /// The last interval that got its keyframe.
  private var lastKept: Int64?
  /// Keyframes passed.
  public private(set) var kept = 0

  /// A sampler of `track`'s keyframes, one per `interval` (at least 1 ms) from `start`.
  public init(name: String = "KeyframeSampler", track: TrackID, start: MediaTime, interval: MediaDuration) {
    self.name = name
    self.track = track
    self.start = start
    self.interval = max(interval, .microseconds(1_000))
  }

  /// Passes the packet when it is the first keyframe of its interval.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track, input.isKeyframe, input.time >= start,
      let offset = try? input.time - start
    else { return }
    let slot = offset.microseconds / interval.microseconds
    guard lastKept.map({ slot > $0 }) ?? true else { return }
    lastKept = slot
    kept += 1
    context.emit(input)
  }

  /// A seek starts the sampling again.
  public func flush(context: NodeContext<EncodedPacket>) { lastKept = nil }
}
