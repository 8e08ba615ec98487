import Foundation
import Nodes
import PipelineGraph

/// Where a Replay's or an ExportTask's callbacks run (rules.md R2, R7, E9).
public enum TiCloudStorageCallbackThread: Int, Sendable {
  /// The main dispatch queue (the default).
  case main = 0
  /// The SDK's one shared serial background queue.
  case background = 1
}

/// How a Replay's clock runs (a Linux addition).
public enum TiCloudStorageReplayPace: Int, Sendable {
  /// Real time: a frame is presented when its time comes (the seed's behaviour).
  case realtime = 0
  /// The same semantics — order, speeds, holds, drops, gaps, events — on a clock that jumps to the next
  /// presentation as soon as the replay is idle: as fast as the machine allows (command lines, benchmark
  /// suites, batch jobs).
  case asFastAsPossible = 1
}

/// The kind of a track (rules.md R3).
public enum TiCloudStorageRecordingTrackKind: Int, Sendable {
  /// Video.
  case video = 1
  /// Audio.
  case audio = 2
}

/// Why a stretch could not be played or exported (rules.md R4).
public enum TiCloudStorageRecordingGapReason: Int, Sendable, CaseIterable {
  /// The cause is not known.
  case unknown = 0
  /// The recording file does not exist.
  case notFound = 1
  /// The recording file could not be downloaded.
  case downloadFailed = 2
  /// The file's bytes do not match the listing.
  case integrityFailed = 3
  /// The file could not be parsed.
  case mediaUnreadable = 4
  /// Frames without a keyframe to decode them from.
  case noKeyFrame = 5
  /// No recording in this stretch.
  case noRecording = 6
  /// The file could not be decrypted.
  case decryptionFailed = 7
  /// Media of an unsupported or incompatible format.
  case unsupportedMedia = 8
  /// The channel has no media here.
  case trackUnavailable = 9

  /// The case's name (`noRecording`, …), as reports and logs spell it.
  public var name: String { GapReason.allCases[rawValue].rawValue }

  init(_ reason: GapReason) {
    switch reason {
    case .unknown: self = .unknown
    case .notFound: self = .notFound
    case .downloadFailed: self = .downloadFailed
    case .integrityFailed: self = .integrityFailed
    case .mediaUnreadable: self = .mediaUnreadable
    case .noKeyFrame: self = .noKeyFrame
    case .noRecording: self = .noRecording
    case .decryptionFailed: self = .decryptionFailed
    case .unsupportedMedia: self = .unsupportedMedia
    case .trackUnavailable: self = .trackUnavailable
    }
  }
}

/// A time range in UTC Unix milliseconds, `endTimeMs > startTimeMs` (rules.md Q11).
public final class TiCloudStorageRecordingRange: Sendable, CustomStringConvertible {
  /// The first millisecond.
  public let startTimeMs: Int64
  /// The millisecond after the last.
  public let endTimeMs: Int64

  init(startTimeMs: Int64, endTimeMs: Int64) {
    self.startTimeMs = startTimeMs
    self.endTimeMs = endTimeMs
  }

  convenience init(_ range: MediaRange) {
    self.init(startTimeMs: range.start.milliseconds, endTimeMs: range.end.milliseconds)
  }

  /// `[start, end)`.
  public var description: String { "[\(startTimeMs), \(endTimeMs))" }
}

/// One track of a device: a kind and a channel id.
public final class TiCloudStorageRecordingTrack: Sendable {
  /// Audio or video.
  public let kind: TiCloudStorageRecordingTrackKind
  /// The device's channel id, 0...255.
  public let channelId: UInt8

  init(_ track: TrackID) {
    kind = track.kind == .video ? .video : .audio
    channelId = track.channel
  }

  init(kind: TiCloudStorageRecordingTrackKind, channelId: UInt8) {
    self.kind = kind
    self.channelId = channelId
  }
}

/// A stretch the SDK confirmed it could not play or export, with the tracks it concerns and why.
public final class TiCloudStorageRecordingGap: Sendable {
  /// The stretch, clipped to the play's or the export's range.
  public let range: TiCloudStorageRecordingRange
  /// The tracks without media there.
  public let tracks: [TiCloudStorageRecordingTrack]
  /// At least one reason.
  public let reasons: [TiCloudStorageRecordingGapReason]

  init(_ gap: RecordingGap) {
    range = TiCloudStorageRecordingRange(gap.range)
    tracks = gap.tracks.map(TiCloudStorageRecordingTrack.init)
    reasons = gap.reasons.map(TiCloudStorageRecordingGapReason.init)
  }

  init(
    range: TiCloudStorageRecordingRange, tracks: [TiCloudStorageRecordingTrack],
    reasons: [TiCloudStorageRecordingGapReason]
  ) {
    self.range = range
    self.tracks = tracks
    self.reasons = reasons
  }
}

/// The result of `listRecordings`: a code and, when it is ok, the merged ranges (else empty).
public final class TiCloudStorageRecordingRangesResult: Sendable {
  /// ok or the failure.
  public let code: Int32
  /// Sorted, clipped, merged ranges; empty unless `code` is ok.
  public let recordings: [TiCloudStorageRecordingRange]
  /// What went wrong, in words (a Linux addition for logs and command lines); nil when `code` is ok or
  /// the call was refused before any work.
  public let message: String?

  init(code: Int32, recordings: [TiCloudStorageRecordingRange], message: String? = nil) {
    self.code = code
    self.recordings = recordings
    self.message = message
  }
}

/// One calendar day of `listRecordingDays`.
public final class TiCloudStorageRecordingDay: Sendable {
  /// `YYYY-MM-DD`.
  public let date: String
  /// Whether a recording touches the day between its local midnights.
  public let hasRecording: Bool

  init(date: String, hasRecording: Bool) {
    self.date = date
    self.hasRecording = hasRecording
  }
}

/// The result of `listRecordingDays`: a code and, when it is ok, every day of the range (else empty).
public final class TiCloudStorageRecordingDaysResult: Sendable {
  /// ok or the failure.
  public let code: Int32
  /// Every day from the start date to the end date, ascending; empty unless `code` is ok.
  public let days: [TiCloudStorageRecordingDay]
  /// What went wrong, in words (a Linux addition for logs and command lines); nil when `code` is ok or
  /// the call was refused before any work.
  public let message: String?

  init(code: Int32, days: [TiCloudStorageRecordingDay], message: String? = nil) {
    self.code = code
    self.days = days
    self.message = message
  }
}
