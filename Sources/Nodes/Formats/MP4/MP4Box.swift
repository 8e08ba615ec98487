import Foundation

/// An ISO BMFF box: a type and either raw payload (a leaf) or child boxes (a container).
struct MP4Box {
  /// Boxes whose payload is a list of boxes (among those this code edits).
  static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "dinf", "edts", "mvex", "moof", "traf"]

  var type: String
  var payload: Data
  var children: [MP4Box]
  /// Bytes after a leaf's payload that whoever writes the box streams from elsewhere (a long track's
  /// `stsz` entries): counted in its size, not held here, and left out of ``encode(into:holes:)``'s bytes.
  var streamedLength = 0
  /// Says whose bytes fill the streamed part (a track id).
  var streamTag: UInt32 = 0

  /// Where streamed bytes go in an encoding: at `offset` of the encoded bytes, `length` bytes of `tag`'s.
  struct Hole {
    var offset: Int
    var length: Int
    var tag: UInt32
  }

  init(type: String, payload: Data = Data(), children: [MP4Box] = []) {
    self.type = type
    self.payload = payload
    self.children = children
  }

  /// Parses the boxes of `data` (a container's payload or a whole buffer).
  static func parse(_ data: Data) throws -> [MP4Box] {
    var boxes: [MP4Box] = []
    var offset = data.startIndex
    while offset < data.endIndex {
      guard data.endIndex - offset >= 8 else { throw MP4Error.malformed("truncated box header") }
      var size = Int(data.bigEndian(UInt32.self, at: offset))
      let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
      var headerLength = 8
      if size == 1 {
        guard data.endIndex - offset >= 16 else { throw MP4Error.malformed("truncated large box") }
        size = Int(data.bigEndian(UInt64.self, at: offset + 8))
        headerLength = 16
      } else if size == 0 {
        size = data.endIndex - offset
      }
      guard size >= headerLength, offset + size <= data.endIndex else {
        throw MP4Error.malformed("box \(type) overruns")
      }
      let payload = data[offset + headerLength..<offset + size]
      if containers.contains(type) {
        boxes.append(MP4Box(type: type, children: try parse(Data(payload))))
      } else {
        boxes.append(MP4Box(type: type, payload: Data(payload)))
      }
      offset += size
    }
    return boxes
  }

  /// The box's bytes.
  var encoded: Data {
    var data = Data(capacity: encodedSize)
    encode(into: &data)
    return data
  }

  /// The size of ``encoded``, computed without encoding.
  var encodedSize: Int {
    let body =
      MP4Box.containers.contains(type) ? children.reduce(0) { $0 + $1.encodedSize } : payload.count + streamedLength
    return body + (body + 8 <= Int(UInt32.max) ? 8 : 16)
  }

  /// Appends the box's bytes to `data`: each payload is copied once, however deep the box (an hour's
  /// `stsz` is megabytes; encoding each level apart copied it once a level).
  func encode(into data: inout Data) {
    var holes: [Hole] = []
    encode(into: &data, holes: &holes)
    precondition(holes.isEmpty, "a box with streamed bytes is written with encode(into:holes:)")
  }

  /// Appends the box's bytes to `data` but for the streamed parts of its leaves, whose places (in
  /// `data`'s offsets) are appended to `holes` in order: the writer puts each one's bytes there.
  func encode(into data: inout Data, holes: inout [Hole]) {
    let size = encodedSize
    if size <= Int(UInt32.max) {
      data.appendBigEndian(UInt32(size))
      data.append(contentsOf: Array(type.utf8))
    } else {
      data.appendBigEndian(UInt32(1))
      data.append(contentsOf: Array(type.utf8))
      data.appendBigEndian(UInt64(size))
    }
    if MP4Box.containers.contains(type) {
      for child in children { child.encode(into: &data, holes: &holes) }
    } else {
      data.append(payload)
      if streamedLength > 0 { holes.append(Hole(offset: data.count, length: streamedLength, tag: streamTag)) }
    }
  }

  /// The first child of type `type`.
  func child(_ type: String) -> MP4Box? { children.first { $0.type == type } }

  /// Children of type `type`.
  func children(_ type: String) -> [MP4Box] { children.filter { $0.type == type } }
}

extension Data {
  func bigEndian<Integer: FixedWidthInteger>(_ type: Integer.Type, at offset: Int) -> Integer {
    var value: Integer = 0
    for byte in self[offset..<offset + MemoryLayout<Integer>.size] { value = value << 8 | Integer(byte) }
    return value
  }

  mutating func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
    Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
  }

  mutating func setBigEndian<Integer: FixedWidthInteger>(_ value: Integer, at offset: Int) {
    Swift.withUnsafeBytes(of: value.bigEndian) {
      replaceSubrange(startIndex + offset..<startIndex + offset + MemoryLayout<Integer>.size, with: $0)
    }
  }
}
