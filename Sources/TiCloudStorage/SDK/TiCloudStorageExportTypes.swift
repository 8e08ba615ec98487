import Foundation
import Nodes

/// What to export: a range and the channels (rules.md E6).
public final class TiCloudStorageExportRequest: Sendable {
  /// The first millisecond (UTC).
  public let startTimeMs: Int64
  /// The millisecond after the last.
  public let endTimeMs: Int64
  /// The video channel, 0...255.
  public let videoChannelId: Int
  /// The audio channel, 0...255, or nil for none.
  public let audioChannelId: Int?
  /// Where the MP4 goes (a Linux addition): nil for a new file in the SDK cache directory (the seed's
  /// behaviour), else this path — the file is written under a temporary name beside it and renamed
  /// into place only when complete, and it replaces nothing but a regular file. A path that names a
  /// directory or another non-regular file refuses the export with invalidArgument.
  public let outputPath: String?

  /// A request for `[startTimeMs, endTimeMs)` of `videoChannelId` (and `audioChannelId`), written to
  /// `outputPath` (nil: the SDK cache directory).
  public init(
    startTimeMs: Int64, endTimeMs: Int64, videoChannelId: Int, audioChannelId: Int? = nil, outputPath: String? = nil
  ) {
    self.startTimeMs = startTimeMs
    self.endTimeMs = endTimeMs
    self.videoChannelId = videoChannelId
    self.audioChannelId = audioChannelId
    self.outputPath = outputPath
  }
}

/// The synchronous answer of `exportRecording`: the task exactly when the code is ok (E3).
public final class TiCloudStorageExportTaskStartResult: Sendable {
  /// ok or why the export did not start.
  public let code: Int32
  /// The running task, when `code` is ok.
  public let task: TiCloudStorageExportTask?

  init(code: Int32, task: TiCloudStorageExportTask? = nil) {
    self.code = code
    self.task = task
  }
}

/// How far an export got: the fraction of the range scanned and the source duration written (E12, E13).
public final class TiCloudStorageExportProgress: Sendable {
  /// 0.0...1.0, never decreasing; equal to `progress`.
  public let fraction: Double
  /// Source ms already written to the file, never decreasing.
  public let coveredDurationMs: Int64

  init(fraction: Double, coveredDurationMs: Int64) {
    self.fraction = fraction
    self.coveredDurationMs = coveredDurationMs
  }
}

/// A stretch of the source written to the file, and its place in the file (E23).
public final class TiCloudStorageExportSegment: Sendable {
  /// The source range.
  public let sourceRange: TiCloudStorageRecordingRange
  /// Where it starts in the file (ms from the file's start).
  public let outputStartMs: Int64
  /// Where it ends in the file.
  public let outputEndMs: Int64

  init(_ segment: ExportReport.Segment) {
    sourceRange = TiCloudStorageRecordingRange(
      startTimeMs: segment.sourceRange.startMs, endTimeMs: segment.sourceRange.endMs)
    outputStartMs = segment.outputStartMs
    outputEndMs = segment.outputEndMs
  }
}

/// How an export ended (rules.md E1, E31).
public typealias TiCloudStorageExportTermination = ExportTermination

/// What an export covered (rules.md E20–E27): segments, gaps and unprocessed ranges, sorted and
/// disjoint, that together cover the requested range exactly (E25). One exception, as spec/cli.md
/// states: an export that starts between keyframes begins at the keyframe before the start, and its
/// first segment says so (it is the file's first frame; every player can start there).
///
/// It encodes (a Linux addition) as the report object of `tipipe export` (spec/cli.md): snake_case keys,
/// tracks as `{"kind","channel_id"}`, reasons and termination by name.
public final class TiCloudStorageExportReport: Sendable, Encodable {
  /// `[request.startTimeMs, request.endTimeMs)`.
  public let requestedRange: TiCloudStorageRecordingRange
  /// The source duration written to the file.
  public let coveredDurationMs: Int64
  /// What was written, in time order.
  public let segments: [TiCloudStorageExportSegment]
  /// The gaps found in the scanned part.
  public let gaps: [TiCloudStorageRecordingGap]
  /// What was never scanned because the task ended early.
  public let unprocessedRanges: [TiCloudStorageRecordingRange]
  /// True exactly when the whole range is in the file (no gaps, nothing unprocessed, exhausted).
  public let complete: Bool
  /// How the task ended.
  public let termination: TiCloudStorageExportTermination
  /// The error that ended it early, ok otherwise.
  public let cause: Int32

  init(_ report: ExportReport) {
    requestedRange = TiCloudStorageRecordingRange(
      startTimeMs: report.requestedRange.startMs, endTimeMs: report.requestedRange.endMs)
    coveredDurationMs = report.coveredDurationMs
    segments = report.segments.map(TiCloudStorageExportSegment.init)
    gaps = report.gaps.map(TiCloudStorageRecordingGap.init)
    unprocessedRanges = report.unprocessedRanges.map {
      TiCloudStorageRecordingRange(startTimeMs: $0.startMs, endTimeMs: $0.endMs)
    }
    complete = report.complete
    termination = report.termination
    cause = report.cause
    encoded = report
  }

  /// What `encode(to:)` writes: the report it was made from.
  private let encoded: ExportReport

  /// Encodes the report in the shape of spec/cli.md.
  public func encode(to encoder: any Encoder) throws { try encoded.encode(to: encoder) }
}

/// The final result of a detailed export: a code, the file exactly when it is ok, and the report (E16).
public final class TiCloudStorageExportResult: Sendable {
  /// ok or the failure.
  public let code: Int32
  /// The MP4, when `code` is ok.
  public let file: TiCloudStorageRecordingFile?
  /// What was covered.
  public let report: TiCloudStorageExportReport?
  /// What went wrong, in words (a Linux addition for logs and command lines); nil when `code` is ok.
  public let message: String?

  init(code: Int32, file: TiCloudStorageRecordingFile?, report: TiCloudStorageExportReport?, message: String? = nil) {
    self.code = code
    self.file = file
    self.report = report
    self.message = message
  }
}

extension TiCloudStorageRecordingGap {
  convenience init(_ gap: ExportReport.Gap) {
    self.init(
      range: TiCloudStorageRecordingRange(startTimeMs: gap.range.startMs, endTimeMs: gap.range.endMs),
      tracks: gap.tracks.map {
        TiCloudStorageRecordingTrack(kind: $0.kind == "audio" ? .audio : .video, channelId: UInt8($0.channelId))
      },
      reasons: gap.reasons.map(TiCloudStorageRecordingGapReason.init))
  }
}
