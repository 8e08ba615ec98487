import Foundation
import PipelineGraph

/// Checks each fetched object against its index entry (exact size, SHA-256), decrypts it (AES-128-CBC
/// through OpenSSL) and parses it.
///
/// An object that fails becomes a `gap` event over the object's range, with its tracks and the reason
/// (`notFound`, `downloadFailed`, `integrityFailed`, `decryptionFailed`, `mediaUnreadable`,
/// `unsupportedMedia`); the stream goes on with the next object. Downstream, a gap means decoding must
/// restart at a keyframe.
public final class SegmentVerifier: Node {
  /// Consumes fetched objects.
  public typealias Input = FetchedObject
  /// Emits parsed objects.
  public typealias Output = SegmentObject

  /// The node's name.
  public let name = "SegmentVerifier"
  private let cipher: AES128CBC
  /// Objects that failed, by reason (for statistics and tests).
  public private(set) var failures: [GapReason: Int] = [:]

  /// Creates a verifier (allocating its OpenSSL cipher context).
  public init() throws { cipher = try AES128CBC() }

  /// Verifies, decrypts and parses one object, or reports it as a gap.
  public func process(_ input: FetchedObject, context: NodeContext<SegmentObject>) throws {
    do {
      context.emit(SegmentObject(segment: input.segment, parsed: try verify(input)))
    } catch let error as TiError {
      let reason = error.gapReason ?? .unknown
      failures[reason, default: 0] += 1
      context.send(.gap(RecordingGap(range: input.segment.range, tracks: input.segment.trackIDs, reasons: [reason])))
    }
  }

  private func verify(_ input: FetchedObject) throws -> ParsedSegment {
    let bytes = try input.result.get()
    let segment = input.segment
    guard bytes.count == segment.size else {
      throw TiError.gap(
        .integrityFailed, "object \(segment.id) has \(bytes.count) bytes, the index says \(segment.size)")
    }
    guard SHA256Digest.hexHash(bytes) == segment.sha256.lowercased() else {
      throw TiError.gap(.integrityFailed, "object \(segment.id) does not match its SHA-256")
    }
    let parsed = try SegmentReader.parse(bytes, key: try segment.keyBytes(), cipher: cipher)
    guard parsed.header.range.overlaps(segment.range) else {
      throw TiError.gap(.mediaUnreadable, "object \(segment.id) covers \(parsed.header.range), not \(segment.range)")
    }
    return parsed
  }
}
