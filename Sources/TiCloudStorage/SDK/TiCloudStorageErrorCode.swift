import Nodes

/// The error codes of seed 000 as `Int32` constants (`TiCloudStorageErrorCode`): every method, result
/// and delegate of the SDK speaks in these. The codes the seed names no constant for (6044, 6045, 6130)
/// are returned as their numbers; ``TiCloudStorage/errorToString(_:)`` names them all.
public enum TiCloudStorageErrorCode {
  /// 0: the operation succeeded.
  public static let ok: Int32 = 0
  /// 6000: a parameter is missing or out of range, or a time range is invalid.
  public static let invalidArgument: Int32 = 6000
  /// 6001: the SDK is not initialized or was shut down, or the object was disposed.
  public static let notInitialized: Int32 = 6001
  /// 6014: the token has expired.
  public static let tokenExpired: Int32 = 6014
  /// 6022: already initialized with a different configuration.
  public static let alreadyInitialized: Int32 = 6022
  /// 6024: the token is invalid or has no access to the device or recording.
  public static let permissionDenied: Int32 = 6024
  /// 6026: the object is still playing, recording, bound or running a task.
  public static let inUse: Int32 = 6026
  /// 6027: playback or recording has not started.
  public static let notStarted: Int32 = 6027
  /// 6029: a binding the operation requires has not been made.
  public static let notBound: Int32 = 6029
  /// 6030: a required target or media-channel configuration is missing.
  public static let notConfigured: Int32 = 6030
  /// 6043: not enough resources to create or continue a task.
  public static let resourceExhausted: Int32 = 6043
  /// 6046: an output file could not be created or written.
  public static let fileWriteFailed: Int32 = 6046
  /// 6113: an unsupported format, or a codec or resolution change inside a recording or export.
  public static let unsupportedFormat: Int32 = 6113
  /// 6114: an underlying I/O or runtime-boundary failure.
  public static let ioFailed: Int32 = 6114
  /// 6115: the request was cancelled.
  public static let cancelled: Int32 = 6115
  /// 6117: a span over 10 days, or more than 10,000 merged ranges.
  public static let rangeTooLarge: Int32 = 6117
  /// 6118: the Video Output has no frame to snapshot yet.
  public static let noFrame: Int32 = 6118
  /// 6119: the chosen range or channel has no media that can be written.
  public static let noRecordableMedia: Int32 = 6119
  /// 6120: local writing persistently fell behind the replay.
  public static let recordingOverrun: Int32 = 6120
  /// 6122: the recording could not be decrypted or parsed into valid frames.
  public static let recordingUnreadable: Int32 = 6122
  /// 6123: the recording query or the download information could not be obtained.
  public static let cloudStorageUnavailable: Int32 = 6123
  /// 6124: an active ExportTask was stopped by the caller.
  public static let stopped: Int32 = 6124
  /// 6134: the cloud reported that the recording file does not exist.
  public static let recordingNotFound: Int32 = 6134
  /// 6135: the recording file could not be downloaded.
  public static let recordingDownloadFailed: Int32 = 6135
  /// 6136: the local network is definitely unavailable.
  public static let networkUnavailable: Int32 = 6136
  /// 6137: the endpoint's host name cannot be resolved.
  public static let endpointDnsResolutionFailed: Int32 = 6137
}

extension TiErrorCode {
  /// The code as the SDK's methods return it.
  var int32: Int32 { rawValue }
}
