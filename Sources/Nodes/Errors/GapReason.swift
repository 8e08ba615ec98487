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

extension Array where Element == GapReason {
  /// The reasons of every item, each once, in the order they first appear.
  init<Items: Sequence>(unionOf items: Items, _ reasons: (Items.Element) -> [GapReason]) {
    self = []
    for item in items { appendNew(reasons(item)) }
  }

  /// Appends the reasons not already here.
  mutating func appendNew(_ reasons: [GapReason]) {
    for reason in reasons where !contains(reason) { append(reason) }
  }
}
