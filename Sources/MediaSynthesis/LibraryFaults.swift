import Foundation
import Nodes
import PipelineGraph

/// Fault builders: damage a synthesized library in the ways the segment format's error table lists,
/// so tests can check the matching typed error or gap reason.
public enum LibraryFaults {
  /// Deletes the object of segment `index` (the index still lists it): `notFound`.
  public static func removeObject(segment index: Int, in directory: URL) throws {
    let segment = try load(directory).segments[index]
    try FileManager.default.removeItem(at: directory.appendingPathComponent(segment.url))
  }

  /// Flips one byte of the object's body (the index keeps the old SHA-256): `integrityFailed`.
  public static func corruptObject(segment index: Int, in directory: URL) throws {
    let segment = try load(directory).segments[index]
    let url = directory.appendingPathComponent(segment.url)
    var bytes = try Data(contentsOf: url)
    bytes[bytes.count / 2] ^= 0x5A
    try bytes.write(to: url)
  }

  /// Replaces the key of an encrypted segment in the index with another one: `decryptionFailed`.
  public static func replaceKey(segment index: Int, in directory: URL) throws {
    var library = try load(directory)
    guard let key = library.segments[index].key, var bytes = Hex.decode(key) else {
      throw MediaError(.invalidArgument, "segment \(index) is not encrypted")
    }
    bytes[0] ^= 0xFF
    bytes[15] ^= 0x0F
    library.segments[index].key = Hex.encode(bytes)
    try library.encoded().write(to: directory.appendingPathComponent("index.json"))
  }

  /// Rewrites the object of segment `index` without its records before the first keyframe *after* its
  /// start, then without that keyframe's flag: the object now starts without a keyframe, and — once its
  /// predecessor is lost — its frames up to the next keyframe cannot be decoded (`noKeyFrame`).
  public static func stripLeadingKeyframe(segment index: Int, in directory: URL) throws {
    try rewriteRecords(segment: index, in: directory) { records in
      var records = records
      guard let first = records.firstIndex(where: { $0.track.kind == .video && $0.isKeyframe }) else { return records }
      records[first].isKeyframe = false
      // A non-IDR frame cannot stand in for an IDR in the bitstream: replace the payload by the next
      // non-keyframe's, so what the object holds is what a mid-GOP start really looks like.
      if let donor = records[(first + 1)...].first(where: { $0.track.kind == .video && !$0.isKeyframe }) {
        records[first].payload = donor.payload
      }
      return records
    }
  }

  /// Rewrites the object of segment `index` with the records `transform` returns (re-encrypted with the
  /// same key and IV, index size and SHA-256 updated): a valid object whose content is what a test needs
  /// — a relabelled codec, an empty record, a hole inside the object.
  public static func rewriteRecords(
    segment index: Int, in directory: URL, _ transform: ([SegmentRecord]) throws -> [SegmentRecord]
  ) throws {
    var library = try load(directory)
    let segment = library.segments[index]
    let url = directory.appendingPathComponent(segment.url)
    let key = try segment.keyBytes()
    let parsed = try SegmentReader.parse(try Data(contentsOf: url), key: key, cipher: try AES128CBC())
    let object = try SegmentWriter.object(
      records: try transform(parsed.records), range: parsed.header.range, key: key,
      iv: parsed.header.isEncrypted ? parsed.header.iv : nil)
    try object.write(to: url)
    library.segments[index].size = object.count
    library.segments[index].sha256 = SHA256Digest.hexHash(object)
    try library.encoded().write(to: directory.appendingPathComponent("index.json"))
  }

  /// Rewrites the index with the entries `transform` returns (duplicated, overlapping, absurd values).
  public static func rewriteIndex(
    in directory: URL, _ transform: ([RecordingIndex.Segment]) throws -> [RecordingIndex.Segment]
  ) throws {
    var library = try load(directory)
    library.segments = try transform(library.segments)
    try library.encoded().write(to: directory.appendingPathComponent("index.json"))
  }

  private static func load(_ directory: URL) throws -> RecordingIndex {
    try RecordingIndex.decode(try Data(contentsOf: directory.appendingPathComponent("index.json")))
  }
}
