import Foundation
import PipelineGraph

/// Scrub previews as a graph configuration: `CloudSegmentSource (only the objects that can hold a cue's
/// first keyframe) → SegmentVerifier → SegmentDemuxer → KeyframeSampler (the first keyframe of each cue) →
/// FrameDecoder (keyframes only) → ThumbnailSheet`, run to its end on a thread of its own and a
/// free-running clock. What `tipipe thumbnails` writes and `tipipe serve` answers at `/thumbnails`.
public enum ThumbnailGraph {
  /// Fills `sheet` with the keyframes of video channel `channel` of the recordings `service` holds in
  /// the sheet's range, read with `token`; only objects `accepting` accepts are read (a server reads only
  /// what it would serve).
  /// - Throws: ``TiError`` when the graph fails (the listing, the token, a node); a range with no
  ///   keyframe is no error — the sheet then has no tile (``ThumbnailSheet/sprite()`` is nil).
  public static func fill(
    _ sheet: ThumbnailSheet, from service: any RecordingService, token: String, channel: UInt8,
    prefetchBytes: Int = 8 << 20, accepting: @escaping @Sendable (RecordingIndex.Segment) -> Bool = { _ in true }
  ) throws {
    let range = sheet.range
    let interval = sheet.interval
    let source = CloudSegmentSource(
      service: service, range: range, token: token, prefetchBytes: prefetchBytes,
      objectFilter: {
        accepting($0) && KeyframeSampler.mayHoldASample($0.range, start: range.start, interval: interval)
      })
    let executor = ThreadExecutor(name: "tipipe.thumbnails")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: range.start, endingAt: range.end)
    let track = TrackID(.video, channel: channel)
    let sampler = KeyframeSampler(track: track, start: range.start, interval: interval)
    let decoder = try FrameDecoder(track: track, keyframesOnly: true)
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 4))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 4))
    pipeline.connect(demuxer, to: sampler, limits: EdgeLimits(items: 256))
    pipeline.connect(sampler, to: decoder, limits: EdgeLimits(items: 8))
    pipeline.connect(decoder, to: sheet, limits: EdgeLimits(items: 8))
    let outcome = try pipeline.runToCompletion()
    if let failure = outcome.failures.first { throw TiError(failure.error) }
  }
}
