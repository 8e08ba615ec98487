import Foundation
import Nodes

/// What a ``TrackRecorder`` is doing (seed 003, "State and the observable properties").
public enum RecorderState: Sendable, Hashable {
  /// Not recording: a recording can start.
  case idle
  /// Recording.
  case recording
  /// Paused: nothing is written until it resumes.
  case paused
  /// Stopped; the file is being finished. A recording cannot start yet.
  case finalizing
}

/// Low free space on the recordings' filesystem (seed 003, "Disk space").
public enum DiskSpaceWarning: Sendable, Hashable {
  /// Free space fell below ``TrackRecorder/diskSpaceWarningThreshold``: the recording goes on.
  case warning(available: Int64, threshold: Int64)
  /// Free space fell below ``TrackRecorder/diskSpaceCriticalThreshold``: the recorder stopped by itself;
  /// the file arrives through ``TrackRecorder/lastFinishedFile``.
  case criticalStopped(available: Int64, threshold: Int64)
}

/// Why a recording could not start, besides the `RecordingEngine` codes.
public enum RecordingError: Error, Sendable, Hashable {
  /// Free space is below ``TrackRecorder/diskSpaceCriticalThreshold``.
  case insufficientDiskSpace(available: Int64, required: Int64)
}

/// A finished recording (seed 003, "Manage recorded files").
public struct RecordingFileInfo: Sendable, Hashable, Identifiable {
  /// The file name without its extension: the recording `meeting.mp4` has the ID `meeting`.
  public let id: String
  /// Where the file is.
  public let url: URL
  /// The recorded time (paused stretches are not in the file), in seconds.
  public let duration: TimeInterval
  /// The file's size in bytes.
  public let size: Int64
  /// When the file was last written.
  public let createdAt: Date

  /// A description of a recording.
  public init(id: String, url: URL, duration: TimeInterval, size: Int64, createdAt: Date) {
    self.id = id
    self.url = url
    self.duration = duration
    self.size = size
    self.createdAt = createdAt
  }
}

/// The size of the video in a recording.
public struct VideoSize: Sendable, Hashable {
  /// Width in pixels (even).
  public var width: Int
  /// Height in pixels (even).
  public var height: Int

  /// A size.
  public init(width: Int, height: Int) {
    self.width = width
    self.height = height
  }

  /// 1280×720, the recorder's default.
  public static let hd720 = VideoSize(width: 1280, height: 720)
}

/// The `RecordingEngine` errors of seed 003 (an `NSError` domain and codes an app's code switches on).
public enum RecordingEngine {
  /// The error domain.
  public static let domain = "RecordingEngine"
  /// This recorder is already recording, or still finishing the previous file.
  public static let busy = -1
  /// A file with this name already exists.
  public static let fileExists = -2
  /// The file writer could not start.
  public static let writerFailed = -3

  /// An `NSError` of the domain with `code` and a description.
  static func error(_ code: Int, _ message: String) -> NSError {
    NSError(domain: domain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
  }

  /// The engine's `failure` as seed 003 reports it: the system's own error when a system call said why
  /// (an `errno` under it), as the seed says of the writer; otherwise ``writerFailed`` with the engine's
  /// message (a codec that refuses a size is the writer failing, not the system). Either way the engine's
  /// failure stays under it (`NSUnderlyingErrorKey`) for whoever wants its kind. This is where the
  /// engine's failures meet seed 003: the nodes below never choose its codes.
  static func error(for failure: MediaError) -> any Error {
    let info: [String: Any] = [NSLocalizedDescriptionKey: failure.message, NSUnderlyingErrorKey: failure]
    for case let library as LibraryFailure in failure.causes where library.library == "libc" && library.status > 0 {
      // NSPOSIXErrorDomain, as Foundation reports a system call's failure, with what was being done.
      return NSError(domain: NSPOSIXErrorDomain, code: Int(library.status), userInfo: info)
    }
    return NSError(domain: domain, code: writerFailed, userInfo: info)
  }
}
