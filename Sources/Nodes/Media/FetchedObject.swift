import Foundation
import PipelineGraph

/// A segment object as a source delivers it: the index entry and the bytes, or why they could not be had.
public struct FetchedObject: Sendable, WeighedItem {
  /// The index entry the object was fetched for.
  public var segment: RecordingIndex.Segment
  /// The bytes, or the failure (`notFound`, `downloadFailed`…).
  public var result: Result<Data, MediaError>
  /// True when the bytes' SHA-256 was checked against the index as they arrived (the verifier then
  /// skips its own pass).
  public var digestVerified: Bool

  /// Creates a fetched object.
  public init(segment: RecordingIndex.Segment, result: Result<Data, MediaError>, digestVerified: Bool = false) {
    self.segment = segment
    self.result = result
    self.digestVerified = digestVerified
  }

  /// Bytes held.
  public var byteCount: Int { (try? result.get().count) ?? 0 }
  /// The object's span of recording time.
  public var duration: MediaDuration { segment.range.duration }
}
