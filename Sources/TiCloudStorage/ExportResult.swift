import Foundation
import Nodes

/// The outcome of an export (`TiCloudStorageExportResult`): a code, the file when one was produced,
/// and the report.
public struct ExportResult: Sendable {
  /// `ok` exactly when `file` is set.
  public var code: TiErrorCode
  /// The MP4, when one was produced.
  public var file: URL?
  /// The file's duration in milliseconds (0 without a file).
  public var durationMs: Int64
  /// What the file holds.
  public var report: ExportReport
  /// Why the export ended without a file or early, for people: the cause with the file or object
  /// concerned (never a key or token); nil on a complete success.
  public var message: String? = nil
  /// The failure that ended the export early or without a file, with the node that reported it and the
  /// errors underneath (`TiError.detailedDescription`, for logs); nil when it completed or was
  /// cancelled.
  public var error: TiError? = nil
}
