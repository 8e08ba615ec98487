import Foundation
import PipelineGraph

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
