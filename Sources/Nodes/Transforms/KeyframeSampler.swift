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

  /// How far past an interval's start its keyframe is looked for in objects a source skips otherwise
  /// (``mayHoldASample(_:start:interval:)``): 10 s, or the interval when shorter.
  public static let reach = MediaDuration.microseconds(10_000_000)

  /// True when `stretch` of recording may hold a keyframe a sampler of `interval` from `start` keeps —
  /// when it overlaps `[s, s + reach)` for an interval's start `s` (`reach` at most the interval; the
  /// default ``reach``, or the interval when shorter): a source can skip every other object (a day at
  /// one picture a minute reads a third of its 10-second objects; with a `reach` of 1 µs, only those
  /// holding an interval's start). Arithmetic that would overflow keeps the stretch.
  public static func mayHoldASample(
    _ stretch: MediaRange, start: MediaTime, interval: MediaDuration, reach: MediaDuration = KeyframeSampler.reach
  ) -> Bool {
    let step = max(interval.microseconds, 1_000)
    let reach = min(step, max(1, reach.microseconds))
    let (from, overflow) = stretch.start.microseconds.subtractingReportingOverflow(reach)
    guard !overflow else { return true }
    let (difference, below) = from.subtractingReportingOverflow(start.microseconds)
    guard !below else { return true }
    let offset = max(0, difference)
    // The first interval start at or after `from`.
    let (index, rest) = offset.quotientAndRemainder(dividingBy: step)
    let (ahead, tooFar) = (index + (rest > 0 ? 1 : 0)).multipliedReportingOverflow(by: step)
    guard !tooFar else { return true }
    let (first, past) = start.microseconds.addingReportingOverflow(ahead)
    return past || first < stretch.end.microseconds
  }

  /// A seek starts the sampling again.
  public func flush(context: NodeContext<EncodedPacket>) { lastKept = nil }
}
