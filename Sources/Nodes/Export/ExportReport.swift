import PipelineGraph

/// The exact account of what an export holds (`TiCloudStorageExportReport`), in the JSON shape of
/// `spec/cli.md`.
public struct ExportReport: Sendable, Codable, Equatable {
  /// A half-open range in UTC milliseconds.
  public struct Range: Sendable, Codable, Equatable, Comparable {
    /// First instant, inclusive.
    public var startMs: Int64
    /// End, exclusive.
    public var endMs: Int64

    enum CodingKeys: String, CodingKey {
      case startMs = "start_ms"
      case endMs = "end_ms"
    }

    /// Creates a range.
    public init(startMs: Int64, endMs: Int64) {
      self.startMs = startMs
      self.endMs = endMs
    }

    /// Length in milliseconds.
    public var durationMs: Int64 { endMs - startMs }

    /// Orders by start, then end.
    public static func < (lhs: Range, rhs: Range) -> Bool { (lhs.startMs, lhs.endMs) < (rhs.startMs, rhs.endMs) }
  }

  /// A source range written to the file, and where it lies in the file.
  public struct Segment: Sendable, Codable, Equatable {
    /// The stretch of the recording.
    public var sourceRange: Range
    /// Where it starts in the file, ms from the file's start.
    public var outputStartMs: Int64
    /// Where it ends in the file.
    public var outputEndMs: Int64

    enum CodingKeys: String, CodingKey {
      case sourceRange = "source_range"
      case outputStartMs = "output_start_ms"
      case outputEndMs = "output_end_ms"
    }

    /// Creates a segment.
    public init(sourceRange: Range, outputStartMs: Int64, outputEndMs: Int64) {
      self.sourceRange = sourceRange
      self.outputStartMs = outputStartMs
      self.outputEndMs = outputEndMs
    }
  }

  /// A track of a gap.
  public struct Track: Sendable, Codable, Equatable, Hashable {
    /// `video` or `audio`.
    public var kind: String
    /// The channel id.
    public var channelId: Int

    enum CodingKeys: String, CodingKey {
      case kind
      case channelId = "channel_id"
    }

    /// Creates a track entry.
    public init(_ track: TrackID) {
      kind = track.kind.description
      channelId = Int(track.channel)
    }
  }

  /// A stretch that could not be used.
  public struct Gap: Sendable, Codable, Equatable {
    /// The stretch.
    public var range: Range
    /// The tracks concerned.
    public var tracks: [Track]
    /// Why, in the seed's names.
    public var reasons: [GapReason]

    /// Creates a gap.
    public init(range: Range, tracks: [Track], reasons: [GapReason]) {
      self.range = range
      self.tracks = tracks
      self.reasons = reasons
    }
  }

  /// The range asked for.
  public var requestedRange: Range
  /// Source duration written to the file.
  public var coveredDurationMs: Int64
  /// What was written, in time order.
  public var segments: [Segment]
  /// What could not be used, in time order.
  public var gaps: [Gap]
  /// What was never scanned because the task ended early.
  public var unprocessedRanges: [Range]
  /// True exactly when the whole requested range is in the file.
  public var complete: Bool
  /// How the task ended.
  public var termination: ExportTermination
  /// The error that ended it early (0 when none).
  public var cause: Int32

  /// A report of nothing written: the whole range unprocessed, the task ended by `cause` before it
  /// scanned anything.
  public static func unscanned(_ range: Range, termination: ExportTermination, cause: Int32) -> ExportReport {
    ExportReport(
      requestedRange: range, coveredDurationMs: 0, segments: [], gaps: [], unprocessedRanges: [range],
      complete: false, termination: termination, cause: cause)
  }

  enum CodingKeys: String, CodingKey {
    case requestedRange = "requested_range"
    case coveredDurationMs = "covered_duration_ms"
    case segments, gaps
    case unprocessedRanges = "unprocessed_ranges"
    case complete, termination, cause
  }
}
