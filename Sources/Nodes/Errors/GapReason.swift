/// Why a stretch of a recording could not be used (`TiCloudStorageRecordingGapReason` of seed 000).
public enum GapReason: String, Sendable, Hashable, CaseIterable, Codable {
  /// The cause is not known.
  case unknown
  /// The object does not exist.
  case notFound
  /// The object could not be downloaded.
  case downloadFailed
  /// The object's bytes do not match the index's size/SHA-256.
  case integrityFailed
  /// The object could not be parsed.
  case mediaUnreadable
  /// Frames start without a keyframe where decoding (re)starts.
  case noKeyFrame
  /// There is no recording in this stretch.
  case noRecording
  /// The object could not be decrypted.
  case decryptionFailed
  /// The media is of an unsupported or incompatible format.
  case unsupportedMedia
  /// The requested track does not occur.
  case trackUnavailable
}
