import Foundation
import PipelineGraph

/// A segment object as a source delivers it: the index entry and the bytes, or why they could not be had.
public struct FetchedObject: Sendable, WeighedItem {
  /// The index entry the object was fetched for.
  public var segment: RecordingIndex.Segment
  /// The bytes, or the failure (`notFound`, `downloadFailed`…).
  public var result: Result<Data, TiError>

  /// Creates a fetched object.
  public init(segment: RecordingIndex.Segment, result: Result<Data, TiError>) {
    self.segment = segment
    self.result = result
  }

  /// Bytes held.
  public var byteCount: Int { (try? result.get().count) ?? 0 }
  /// The object's span of recording time.
  public var duration: MediaDuration { segment.range.duration }
}

/// A verified, decrypted and parsed object, as the verifier emits it.
public struct SegmentObject: Sendable, WeighedItem {
  /// The index entry.
  public var segment: RecordingIndex.Segment
  /// The header and records (payloads are slices of the decrypted body).
  public var parsed: ParsedSegment

  /// Creates an object.
  public init(segment: RecordingIndex.Segment, parsed: ParsedSegment) {
    self.segment = segment
    self.parsed = parsed
  }

  /// Bytes of payload held.
  public var byteCount: Int { parsed.records.reduce(0) { $0 + $1.payload.count + SegmentRecord.headerSize } }
  /// The object's span of recording time.
  public var duration: MediaDuration { parsed.header.range.duration }
}
