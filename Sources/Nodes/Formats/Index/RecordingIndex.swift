import Foundation
import PipelineGraph

/// The index of a recording library (`spec/segment-format.md`, "The index"): what the cloud listing
/// returns and what a local library keeps as `index.json`.
public struct RecordingIndex: Codable, Sendable, Hashable {
  /// One segment object.
  public struct Segment: Codable, Sendable, Hashable {
    /// One informative track entry.
    public struct Track: Codable, Sendable, Hashable {
      /// `video` or `audio`.
      public var kind: String
      /// The channel id.
      public var channelId: Int
      /// `h264`, `h265`, `aac`, `g711a`, `g711u`.
      public var codec: String

      enum CodingKeys: String, CodingKey {
        case kind
        case channelId = "channel_id"
        case codec
      }

      /// Creates a track entry.
      public init(kind: String, channelId: Int, codec: String) {
        self.kind = kind
        self.channelId = channelId
        self.codec = codec
      }
    }

    /// The object's id.
    public var id: String
    /// First instant, UTC ms.
    public var startMs: Int64
    /// End, UTC ms, exclusive.
    public var endMs: Int64
    /// Absolute, or relative to the index's own URL.
    public var url: String
    /// Exact object size in bytes.
    public var size: Int
    /// Lowercase hex SHA-256 of the object.
    public var sha256: String
    /// Hex AES key, or nil when not encrypted.
    public var key: String?
    /// The tracks (informative).
    public var tracks: [Track]

    enum CodingKeys: String, CodingKey {
      case id
      case startMs = "start_ms"
      case endMs = "end_ms"
      case url, size, sha256, key, tracks
    }

    /// Creates a segment entry.
    public init(
      id: String, startMs: Int64, endMs: Int64, url: String, size: Int, sha256: String, key: String?, tracks: [Track]
    ) {
      self.id = id
      self.startMs = startMs
      self.endMs = endMs
      self.url = url
      self.size = size
      self.sha256 = sha256
      self.key = key
      self.tracks = tracks
    }

    /// Where the object of a local library lies: its `url` as a `file:` URL, an absolute path, or a path
    /// relative to the library's `directory`.
    public func fileURL(in directory: URL) -> URL {
      if let url = URL(string: url), url.scheme == "file" { return url }
      if url.hasPrefix("/") { return URL(fileURLWithPath: url) }
      return directory.appendingPathComponent(url)
    }

    /// The bytes a read-ahead of the object holds: an implausible `size` (above
    /// ``RecordingIndex/maximumObjectSize``) counts as nothing, since it is refused without reading.
    var prefetchSize: Int { size <= RecordingIndex.maximumObjectSize ? size : 0 }

    /// The covered range.
    public var range: MediaRange { MediaRange(startMilliseconds: startMs, endMilliseconds: endMs) }

    /// The tracks as ids (unknown kinds skipped).
    public var trackIDs: [TrackID] {
      tracks.compactMap { track in
        guard let channel = UInt8(exactly: track.channelId) else { return nil }
        switch track.kind {
        case "video": return TrackID(.video, channel: channel)
        case "audio": return TrackID(.audio, channel: channel)
        default: return nil
        }
      }
    }

    /// The AES key as bytes; nil when absent; throws when it is not 32 hex digits.
    public func keyBytes() throws -> [UInt8]? {
      guard let key else { return nil }
      guard let bytes = Hex.decode(key), bytes.count == 16 else {
        throw MediaError.gap(.decryptionFailed, "segment \(id): key is not 32 hex digits")
      }
      return bytes
    }
  }

  /// The device the recording belongs to.
  public var deviceId: String
  /// The objects, ordered by `start_ms`.
  public var segments: [Segment]

  enum CodingKeys: String, CodingKey {
    case deviceId = "device_id"
    case segments
  }

  /// Creates an index.
  public init(deviceId: String, segments: [Segment]) {
    self.deviceId = deviceId
    self.segments = segments
  }

  /// The largest object an index entry may announce (1 GiB; the spec's objects cover 10–60 s). A larger
  /// `size` makes that object a `mediaUnreadable` gap without reading it, and keeps sums of sizes far
  /// from `Int.max`.
  public static let maximumObjectSize = 1 << 30

  /// Decodes an index, mapping malformed JSON to a typed error (`serviceUnavailable`) that says
  /// what is wrong; `source` names the index in messages.
  ///
  /// An entry with an empty range, a negative size or a time outside `MediaTime/validMilliseconds`
  /// makes the index malformed.
  public static func decode(_ data: Data, source: String = "the index") throws -> RecordingIndex {
    let index: RecordingIndex
    do {
      index = try JSONDecoder().decode(RecordingIndex.self, from: data)
    } catch let DecodingError.dataCorrupted(context) {
      throw malformed(source, "\(context.debugDescription) \(path(context.codingPath))")
    } catch let DecodingError.keyNotFound(key, context) {
      throw malformed(source, "missing key '\(key.stringValue)' \(path(context.codingPath))")
    } catch let DecodingError.typeMismatch(_, context) {
      throw malformed(source, "\(context.debugDescription) \(path(context.codingPath))")
    } catch let DecodingError.valueNotFound(_, context) {
      throw malformed(source, "\(context.debugDescription) \(path(context.codingPath))")
    } catch {
      throw malformed(source, "not JSON")
    }
    for (position, segment) in index.segments.enumerated() {
      let entry = "segment \(position) (id \(segment.id.prefix(64)))"
      guard MediaTime.validMilliseconds.contains(segment.startMs), MediaTime.validMilliseconds.contains(segment.endMs)
      else { throw malformed(source, "\(entry): start_ms or end_ms is outside the representable times") }
      guard segment.endMs > segment.startMs else {
        throw malformed(source, "\(entry): end_ms \(segment.endMs) is not after start_ms \(segment.startMs)")
      }
      guard segment.size >= 0 else { throw malformed(source, "\(entry): negative size \(segment.size)") }
    }
    return index
  }

  /// The index of the local library in `directory` (its `index.json`, at most 256 MB: about a million
  /// entries); an unreadable or malformed index is `serviceUnavailable`.
  public static func load(library directory: URL) throws -> RecordingIndex {
    let path = directory.appendingPathComponent("index.json").path
    var status = stat()
    if stat(directory.path, &status) == 0, status.st_mode & S_IFMT != S_IFDIR {
      throw MediaError(.serviceUnavailable, "the library \(directory.path) is not a directory")
    }
    let data: Data
    do {
      data = try RegularFile.contents(atPath: path, maximumSize: 256 << 20)
    } catch {
      throw MediaError(.serviceUnavailable, "cannot read the index \(path): it \(error)")
    }
    return try decode(data, source: path)
  }

  private static func malformed(_ source: String, _ what: String) -> MediaError {
    MediaError(.serviceUnavailable, "\(source) is malformed: \(what)")
  }

  private static func path(_ codingPath: [any CodingKey]) -> String {
    guard !codingPath.isEmpty else { return "" }
    return "at " + codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
  }

  /// The index as pretty, key-sorted JSON.
  public func encoded() throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return try encoder.encode(self)
  }
}

/// Hexadecimal conversion (shared with the project's other modules, not part of its API).
package enum Hex {
  /// Lowercase hex of `bytes`.
  package static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    bytes.map { String(format: "%02x", $0) }.joined()
  }

  /// The bytes of an even-length hex string; nil when it is not one.
  package static func decode(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
      guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }

  private static func value(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}

extension RecordingIndex {
  /// The recording's ranges inside `[range.start, range.end)`: clipped to it, sorted, with overlapping
  /// and abutting segments merged (what `listRecordings` returns).
  public func mergedRanges(in range: MediaRange) -> [MediaRange] {
    var merged: [MediaRange] = []
    for segment in segments.sorted(by: { $0.startMs < $1.startMs }) where segment.range.overlaps(range) {
      let clipped = MediaRange(start: max(segment.range.start, range.start), end: min(segment.range.end, range.end))
      if let last = merged.last, clipped.start <= last.end {
        merged[merged.count - 1].end = max(last.end, clipped.end)
      } else {
        merged.append(clipped)
      }
    }
    return merged
  }
}
