import Foundation
import PipelineGraph

/// Scrub previews as a graph configuration: `CloudSegmentSource (only the objects that can hold a cue's
/// first keyframe) → SegmentVerifier → SegmentDemuxer → KeyframeSampler (the first keyframe of each cue) →
/// FrameDecoder (keyframes only) → ThumbnailSheet`, run to its end on a thread of its own and a
/// free-running clock. What `tipipe thumbnails` writes and `tipipe serve` answers at `/thumbnails`.
///
/// It runs in two passes, because reading an object costs more than anything else here (its SHA-256,
/// AES and parsing: ~10 ms of CPU for 10 s of 720p, a keyframe decode ~3 ms): first over the objects
/// that hold a cue's start, where a camera's keyframe almost always is — a cue takes a keyframe there
/// only when nothing between its start and that keyframe was skipped (the sampler does not sample
/// across gaps) — then, only for the cues still without a picture, over every object within
/// ``KeyframeSampler/reach`` after their starts, as one pass over those would. A day at one picture a
/// minute whose keyframes fall on the minute reads one 10-second object a minute instead of two; the
/// pictures are those one pass over both sets would give.
public enum ThumbnailGraph {
  /// Fills `sheet` with the keyframes of video channel `channel` of the recordings `service` holds in
  /// the sheet's range, read with `token`; only objects `accepting` accepts are read (a server reads only
  /// what it would serve).
  /// - Throws: ``MediaError`` when the graph fails (the listing, the token, a node); a range with no
  ///   keyframe is no error — the sheet then has no tile (``ThumbnailSheet/sprite()`` is nil).
  public static func fill(
    _ sheet: ThumbnailSheet, from service: any RecordingService, token: String, channel: UInt8,
    prefetchBytes: Int = 8 << 20, accepting: @escaping @Sendable (RecordingIndex.Segment) -> Bool = { _ in true }
  ) throws {
    let (range, interval) = (sheet.range, sheet.interval)
    try run(sheet, from: service, token: token, channel: channel, prefetchBytes: prefetchBytes, acrossGaps: false) {
      accepting($0)
        && KeyframeSampler.mayHoldASample($0.range, start: range.start, interval: interval, reach: .microseconds(0))
    }
    let missing = sheet.missingCues
    guard !missing.isEmpty else { return }
    try run(sheet, from: service, token: token, channel: channel, prefetchBytes: prefetchBytes, acrossGaps: true) {
      accepting($0) && Self.reaches(missing, start: range.start, interval: interval, from: $0.range)
    }
  }

  /// True when the start `s` of one of `cues` (sorted indices of intervals from `start`) lies in
  /// `[stretch.start − reach, stretch.end)`, `reach` being ``KeyframeSampler/reach`` or the interval when
  /// shorter — ``KeyframeSampler/mayHoldASample(_:start:interval:reach:)`` for some cues only. A cue
  /// starts inside the sheet's range, so its start and reach are far from overflowing.
  static func reaches(_ cues: [Int], start: MediaTime, interval: MediaDuration, from stretch: MediaRange) -> Bool {
    let step = interval.microseconds
    let reach = min(step, KeyframeSampler.reach.microseconds)
    let cueStart = { (cue: Int) in start.microseconds + Int64(cue) * step }
    // The first cue that starts at or after `stretch.start − reach`.
    var (low, high) = (0, cues.count)
    while low < high {
      let middle = (low + high) / 2
      if cueStart(cues[middle]) + reach < stretch.start.microseconds { low = middle + 1 } else { high = middle }
    }
    return low < cues.count && cueStart(cues[low]) < stretch.end.microseconds
  }

  /// One pass: the graph over the objects `filter` accepts, adding to what `sheet` has; the sampler
  /// samples `acrossGaps` or not.
  private static func run(
    _ sheet: ThumbnailSheet, from service: any RecordingService, token: String, channel: UInt8,
    prefetchBytes: Int, acrossGaps: Bool, filter: @escaping @Sendable (RecordingIndex.Segment) -> Bool
  ) throws {
    let (range, interval) = (sheet.range, sheet.interval)
    let source = CloudSegmentSource(
      service: service, range: range, token: token, prefetchBytes: prefetchBytes, objectFilter: filter)
    let executor = ThreadExecutor(name: "tipipe.thumbnails")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: range.start, endingAt: range.end)
    let track = TrackID(.video, channel: channel)
    let sampler = KeyframeSampler(track: track, start: range.start, interval: interval, acrossGaps: acrossGaps)
    let decoder = try FrameDecoder(track: track, keyframesOnly: true)
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 4))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 4))
    pipeline.connect(demuxer, to: sampler, limits: EdgeLimits(items: 256))
    pipeline.connect(sampler, to: decoder, limits: EdgeLimits(items: 8))
    pipeline.connect(decoder, to: sheet, limits: EdgeLimits(items: 8))
    let outcome = try pipeline.runToCompletion()
    if let failure = outcome.failures.first { throw MediaError(failure.error) }
  }
}
