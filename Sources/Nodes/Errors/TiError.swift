import PipelineGraph

/// The framework's error: a seed-000 code, a message for people, and, when the failure makes a stretch
/// of a recording unusable, the gap reason it maps to.
public struct TiError: Error, Sendable, CustomStringConvertible, Equatable {
  /// The seed's error code.
  public var code: TiErrorCode
  /// What happened, for logs and the command line.
  public var message: String
  /// The gap reason this failure stands for, when it concerns a stretch of media.
  public var gapReason: GapReason?

  /// Creates an error.
  public init(_ code: TiErrorCode, _ message: String, gapReason: GapReason? = nil) {
    self.code = code
    self.message = message
    self.gapReason = gapReason
  }

  /// `error` as a ``TiError``: itself, the one a `NodeFailure` carries, or `ioFailed` with its text
  /// for any other error.
  public init(_ error: any Error) {
    switch error {
    case let error as TiError: self = error
    case let failure as NodeFailure: self.init(failure.error)
    default: self.init(.ioFailed, String(describing: error))
    }
  }

  /// An error that makes a stretch of media unusable: the code follows from the reason.
  public static func gap(_ reason: GapReason, _ message: String) -> TiError {
    let code: TiErrorCode =
      switch reason {
      case .notFound: .recordingNotFound
      case .downloadFailed: .recordingDownloadFailed
      case .integrityFailed, .mediaUnreadable, .decryptionFailed, .noKeyFrame: .recordingUnreadable
      case .unsupportedMedia: .unsupportedFormat
      case .trackUnavailable, .noRecording: .noRecordableMedia
      case .unknown: .ioFailed
      }
    return TiError(code, message, gapReason: reason)
  }

  /// `error: name (code): message`, the command line's error line without its prefix.
  public var description: String {
    if let gapReason { return "\(code): \(message) [\(gapReason.rawValue)]" }
    return "\(code): \(message)"
  }
}
