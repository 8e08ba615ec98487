import Foundation
import PipelineGraph

/// A parsed, decrypted object.
public struct ParsedSegment: Sendable {
  /// The header.
  public var header: SegmentHeader
  /// The records, in body order.
  public var records: [SegmentRecord]
}
