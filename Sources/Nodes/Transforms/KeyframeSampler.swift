import PipelineGraph

/// Passes one keyframe of a track per `interval` of a range — the first in each — and nothing else of
/// that track: what a decoder needs for one picture per interval (scrub previews of a day, one picture
/// a minute, decode 1,440 keyframes instead of 43,200). Other tracks' packets are dropped; events pass.
///
/// Made not to sample `acrossGaps`, an interval takes no keyframe that comes after a gap of its track
/// begun at or after the interval's start (other than a stretch the demuxer could not decode,
/// `noKeyFrame`): where a source skipped objects, an earlier keyframe of the interval may have been,
/// so the interval is left for a later pass over what was skipped.
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
  /// Whether a keyframe after a gap still counts for an interval begun before the gap.
  public let acrossGaps: Bool
  /// The last interval that got its keyframe.
  private var lastKept: Int64?
  /// Where the latest gap of the track (not `noKeyFrame` alone) began, when not ``acrossGaps``.
  private var lastGapStart: MediaTime?
  /// Keyframes passed.
  public private(set) var kept = 0

  /// A sampler of `track`'s keyframes, one per `interval` (at least 1 ms) from `start`; see the type's
  /// documentation for `acrossGaps`.
  public init(
    name: String = "KeyframeSampler", track: TrackID, start: MediaTime, interval: MediaDuration,
    acrossGaps: Bool = true
  ) {
    self.name = name
    self.track = track
    self.start = start
    self.interval = max(interval, .microseconds(1_000))
    self.acrossGaps = acrossGaps
  }

  /// Passes the packet when it is the first keyframe of its interval.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track, input.isKeyframe, input.time >= start,
      let offset = try? input.time - start
    else { return }
    let slot = offset.microseconds / interval.microseconds
    guard lastKept.map({ slot > $0 }) ?? true else { return }
    // The slot's start is at most the packet's time: no overflow.
    if let gap = lastGapStart, gap.microseconds >= start.microseconds + slot * interval.microseconds { return }
    lastKept = slot
    kept += 1
    context.emit(input)
  }

  /// Notes where gaps of the track begin (when not ``acrossGaps``); every event passes on.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if !acrossGaps, case .gap(let gap) = try MediaEvent(event), gap.concerns(track), gap.reasons != [.noKeyFrame] {
      lastGapStart = max(lastGapStart ?? gap.range.start, gap.range.start)
    }
    context.send(event)
  }

  /// How far past an interval's start its keyframe is looked for in objects a source skips otherwise
  /// (``mayHoldASample(_:start:interval:reach:)``): 10 s, or the interval when shorter.
  public static let reach = MediaDuration.microseconds(10_000_000)

  /// True when `stretch` of recording may hold a keyframe a sampler of `interval` from `start` keeps —
  /// when an interval's start `s` lies in `[stretch.start − reach, stretch.end)` (`reach` at most the
  /// interval; the default ``reach``, or the interval when shorter): a source can skip the other objects
  /// (a day at one picture a minute reads a third of its 10-second objects; with a `reach` of zero, only
  /// the objects holding an interval's start, a sixth). Arithmetic that would overflow keeps the stretch.
  public static func mayHoldASample(
    _ stretch: MediaRange, start: MediaTime, interval: MediaDuration, reach: MediaDuration = KeyframeSampler.reach
  ) -> Bool {
    let step = max(interval.microseconds, 1_000)
    let reach = min(step, max(0, reach.microseconds))
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
  public func flush(context: NodeContext<EncodedPacket>) {
    lastKept = nil
    lastGapStart = nil
  }
}
