/// A seed-000 error code (`TiCloudStorageErrorCode`): the full `Int32`, including the codes the seed
/// names no constant for (6044, 6045, 6130).
public struct TiErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The numeric code as the seed lists it.
  public var rawValue: Int32

  /// Wraps any code, documented or not.
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// 0: the operation succeeded.
  public static let ok = TiErrorCode(rawValue: 0)
  /// 6000: a parameter is missing or out of range, or a time range is invalid.
  public static let invalidArgument = TiErrorCode(rawValue: 6000)
  /// 6001: not initialized, or shut down.
  public static let notInitialized = TiErrorCode(rawValue: 6001)
  /// 6014: the token has expired.
  public static let tokenExpired = TiErrorCode(rawValue: 6014)
  /// 6022: already initialized with a different configuration.
  public static let alreadyInitialized = TiErrorCode(rawValue: 6022)
  /// 6024: the token is invalid or has no access.
  public static let permissionDenied = TiErrorCode(rawValue: 6024)
  /// 6026: the object is still playing, recording or running a task.
  public static let inUse = TiErrorCode(rawValue: 6026)
  /// 6027: playback or recording has not started.
  public static let notStarted = TiErrorCode(rawValue: 6027)
  /// 6029: a binding the operation requires has not been made.
  public static let notBound = TiErrorCode(rawValue: 6029)
  /// 6030: a required target or media-channel configuration is missing.
  public static let notConfigured = TiErrorCode(rawValue: 6030)
  /// 6043: not enough resources to create or continue a task.
  public static let resourceExhausted = TiErrorCode(rawValue: 6043)
  /// 6044 (no constant in the seed): the work directory could not be created or opened.
  public static let workDirectoryUnavailable = TiErrorCode(rawValue: 6044)
  /// 6045 (no constant in the seed): a file's status could not be read when deleting it.
  public static let fileStatusUnreadable = TiErrorCode(rawValue: 6045)
  /// 6046: an output file could not be created or written.
  public static let fileWriteFailed = TiErrorCode(rawValue: 6046)
  /// 6113: unsupported format, or a codec/resolution change inside a recording or export task.
  public static let unsupportedFormat = TiErrorCode(rawValue: 6113)
  /// 6114: an underlying I/O or runtime-boundary failure.
  public static let ioFailed = TiErrorCode(rawValue: 6114)
  /// 6115: the request was cancelled.
  public static let cancelled = TiErrorCode(rawValue: 6115)
  /// 6117: the span exceeds 10 days or the merged result 10,000 ranges.
  public static let rangeTooLarge = TiErrorCode(rawValue: 6117)
  /// 6118: the Video Output has no frame to snapshot yet.
  public static let noFrame = TiErrorCode(rawValue: 6118)
  /// 6119: the chosen range or channel has no media that can be written.
  public static let noRecordableMedia = TiErrorCode(rawValue: 6119)
  /// 6120: local writing persistently fell behind the replay data.
  public static let recordingOverrun = TiErrorCode(rawValue: 6120)
  /// 6122: the recording could not be decrypted or parsed into valid frames.
  public static let recordingUnreadable = TiErrorCode(rawValue: 6122)
  /// 6123: the recording query or download information could not be obtained.
  public static let cloudStorageUnavailable = TiErrorCode(rawValue: 6123)
  /// 6124: an active ExportTask was stopped by the caller.
  public static let stopped = TiErrorCode(rawValue: 6124)
  /// 6130 (no constant in the seed): a decoding Output saw no media of its bound channel for 5 s.
  public static let channelMismatch = TiErrorCode(rawValue: 6130)
  /// 6134: the cloud reported that the recording file does not exist.
  public static let recordingNotFound = TiErrorCode(rawValue: 6134)
  /// 6135: the recording file could not be downloaded.
  public static let recordingDownloadFailed = TiErrorCode(rawValue: 6135)
  /// 6136: the local network is definitely unavailable.
  public static let networkUnavailable = TiErrorCode(rawValue: 6136)
  /// 6137: the endpoint's host name cannot be resolved.
  public static let endpointDnsResolutionFailed = TiErrorCode(rawValue: 6137)

  private static let names: [Int32: String] = [
    0: "ok", 6000: "invalidArgument", 6001: "notInitialized", 6014: "tokenExpired",
    6022: "alreadyInitialized", 6024: "permissionDenied", 6026: "inUse", 6027: "notStarted",
    6029: "notBound", 6030: "notConfigured", 6043: "resourceExhausted", 6044: "workDirectoryUnavailable",
    6045: "fileStatusUnreadable", 6046: "fileWriteFailed", 6113: "unsupportedFormat", 6114: "ioFailed",
    6115: "cancelled", 6117: "rangeTooLarge", 6118: "noFrame", 6119: "noRecordableMedia",
    6120: "recordingOverrun", 6122: "recordingUnreadable", 6123: "cloudStorageUnavailable",
    6124: "stopped", 6130: "channelMismatch", 6134: "recordingNotFound", 6135: "recordingDownloadFailed",
    6136: "networkUnavailable", 6137: "endpointDnsResolutionFailed",
  ]

  /// The stable name of the code (the seed's constant name; `code<N>` for an undocumented one).
  public var name: String { Self.names[rawValue] ?? "code\(rawValue)" }

  /// `name (code)`, as the command line prints it.
  public var description: String { "\(name) (\(rawValue))" }
}
