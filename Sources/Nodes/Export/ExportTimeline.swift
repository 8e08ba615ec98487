import PipelineGraph

/// The account of an export: which stretches of the requested range went into the file, which are
/// gaps and why, how far the scan got — and the report that follows (seed 000, ExportTask).
///
/// A pure value, fed by the ``Exporter`` (the stretches it wrote, the gap events it got, how far it
/// scanned); it knows nothing of files or graphs.
///
/// Report rules:
/// - Each stretch written is a segment; the first starts at output 0 and each next one where the
///   previous ended, so the file lasts `covered_duration_ms`. The first may begin before the request
///   (at the keyframe before its start); none ends after it.
/// - The requested range is partitioned exactly into segments, video-level gaps (every track) and
///   unprocessed ranges: each stretch of it outside the segments and before where the scan stopped is
///   one gap, with the reasons of every video gap event that overlaps it (`unknown` when none does).
/// - The audio track's gaps are reported where the file has video: the audio gap events cut to the
///   segments, less the pieces that a segment's edge cut to under ``GapDetector/audioTolerance``
///   (audio may start or end that much after or before the video of a stretch); the whole of every
///   segment when the file has no audio track.
/// - A task cut short (cancelled, stopped, interrupted) accounts for the range up to the end of what
///   was written or reported as a gap; what lies after is unprocessed (media read but not yet written
///   is not a gap). Nothing to export (`noMedia`) is known only once everything was scanned.
/// - `complete` exactly when the task was not cut short and there is neither gap nor unprocessed range.
///
/// Milliseconds come from `MediaTime/milliseconds` alone (nearest, halves away from zero); segment
/// lengths are differences of those, so the partition is exact in the report's unit.
public struct ExportTimeline: Sendable {
  /// The requested range.
  public let range: MediaRange
  /// The video track the file follows.
  public let videoTrack: TrackID
  /// The audio track, if any.
  public let audioTrack: TrackID?
  /// False when the file was made without an audio track although one was requested: the requested
  /// audio is then missing wherever the file has video.
  public var fileHasAudio = true
  /// The stretches written, in order (source times).
  public private(set) var stretches: [MediaRange] = []
  /// How far the range has been scanned (monotonic, at most its end): the progress.
  public private(set) var scanned: MediaTime
  private var videoGaps: [RecordingGap] = []
  private var audioGaps: [RecordingGap] = []

  /// An empty account of `range`.
  public init(range: MediaRange, videoTrack: TrackID, audioTrack: TrackID?) {
    self.range = range
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    scanned = range.start
  }

  // MARK: Feeding

  /// A stretch was written (empty ones are ignored).
  public mutating func add(stretch: MediaRange) {
    guard !stretch.isEmpty else { return }
    stretches.append(stretch)
  }

  /// A gap event: of every track or the video track (a video-level gap), or of the audio track.
  public mutating func record(_ gap: RecordingGap) {
    guard let clipped = gap.range.clamped(to: range) else { return }
    var gap = gap
    gap.range = clipped
    if gap.concerns(videoTrack) {
      videoGaps.append(gap)
    } else if let audioTrack, gap.tracks.contains(audioTrack) {
      audioGaps.append(gap)
    }
  }

  /// The scan reached `time`.
  public mutating func scan(through time: MediaTime) {
    scanned = max(scanned, min(time, range.end))
  }

  /// The scanned fraction of the range, 0…1.
  public var progress: Double {
    let length = Double(range.duration.microseconds)
    guard length > 0 else { return 1 }
    return min(1, max(0, Double((try? scanned - range.start)?.microseconds ?? 0) / length))
  }

  /// Milliseconds covered by the stretches written and `open` (a stretch still being written).
  public func coveredMilliseconds(open: MediaRange? = nil) -> Int64 {
    (stretches + (open.map { [$0] } ?? [])).reduce(0) { $0 + $1.end.milliseconds - $1.start.milliseconds }
  }

  // MARK: The report

  /// The report of a task that ended with `termination`, reported with the SDK's code `cause` (0 when
  /// none; the facade chooses it, as it maps `failure`); `open` is a stretch still being written when it
  /// ended (it counts as far as it was written). A task that failed for want of media (`noMedia`) scanned
  /// the whole range.
  public func report(
    termination: ExportTermination, cause: Int32, failure: MediaError.Kind? = nil, open: MediaRange? = nil
  ) -> ExportReport {
    let scannedAll = termination == .exhausted || failure == .noMedia
    let written = (stretches + (open.map { [$0] } ?? [])).filter { $0.end.milliseconds > $0.start.milliseconds }
    let accounted = (written.map(\.end) + videoGaps.map(\.range.end)).max() ?? range.start
    let scanned = scannedAll ? range.end : min(range.end, max(range.start, accounted))

    var segments: [ExportReport.Segment] = []
    var output: Int64 = 0
    for stretch in written {
      let source = ExportReport.Range(startMs: stretch.start.milliseconds, endMs: stretch.end.milliseconds)
      segments.append(
        ExportReport.Segment(sourceRange: source, outputStartMs: output, outputEndMs: output + source.durationMs))
      output += source.durationMs
    }

    var tracks = [ExportReport.Track(videoTrack)]
    if let audioTrack { tracks.append(ExportReport.Track(audioTrack)) }
    var gaps: [ExportReport.Gap] = []
    var cursor = range.start
    for stretch in written + [MediaRange(start: scanned, end: scanned)] {
      let hole = MediaRange(start: cursor, end: min(stretch.start, scanned))
      if hole.end.milliseconds > hole.start.milliseconds {
        gaps.append(ExportReport.Gap(range: Self.milliseconds(hole), tracks: tracks, reasons: videoReasons(over: hole)))
      }
      cursor = max(cursor, stretch.end)
    }
    if let audioTrack {
      let covered = written.compactMap { $0.clamped(to: MediaRange(start: range.start, end: scanned)) }
      gaps += audioPieces(over: covered).map {
        ExportReport.Gap(
          range: Self.milliseconds($0.range), tracks: [ExportReport.Track(audioTrack)], reasons: $0.reasons)
      }
    }
    gaps = gaps.filter { $0.range.durationMs > 0 }.sorted { $0.range < $1.range }

    let unprocessedStart = max(scanned, cursor)
    let unprocessed =
      scanned < range.end && unprocessedStart.milliseconds < range.end.milliseconds
      ? [ExportReport.Range(startMs: unprocessedStart.milliseconds, endMs: range.end.milliseconds)] : []
    return ExportReport(
      requestedRange: Self.milliseconds(range), coveredDurationMs: output, segments: segments, gaps: gaps,
      unprocessedRanges: unprocessed,
      complete: termination == .exhausted && gaps.isEmpty && unprocessed.isEmpty, termination: termination,
      cause: cause)
  }

  /// The reasons of the video gap events over `hole`, in the order they came.
  private func videoReasons(over hole: MediaRange) -> [GapReason] {
    let reasons = [GapReason](unionOf: videoGaps.filter { $0.range.overlaps(hole) }, \.reasons)
    return reasons.isEmpty ? [.unknown] : reasons
  }

  /// The audio gaps inside the `covered` stretches.
  private func audioPieces(over covered: [MediaRange]) -> [(range: MediaRange, reasons: [GapReason])] {
    guard fileHasAudio else {
      return covered.map { stretch in
        let reasons = [GapReason](unionOf: audioGaps.filter { $0.range.overlaps(stretch) }, \.reasons)
        return (stretch, reasons.isEmpty ? [.trackUnavailable] : reasons)
      }
    }
    var pieces: [(range: MediaRange, reasons: [GapReason])] = []
    for gap in audioGaps {
      for stretch in covered {
        guard let piece = gap.range.clamped(to: stretch) else { continue }
        let cutByEdge = piece != gap.range && (piece.start == stretch.start || piece.end == stretch.end)
        if cutByEdge && piece.duration < GapDetector.audioTolerance { continue }
        pieces.append((piece, gap.reasons))
      }
    }
    return pieces
  }

  private static func milliseconds(_ range: MediaRange) -> ExportReport.Range {
    ExportReport.Range(startMs: range.start.milliseconds, endMs: range.end.milliseconds)
  }
}
