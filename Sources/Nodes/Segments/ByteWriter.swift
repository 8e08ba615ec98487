import Foundation

/// Little-endian serialization into a growing buffer.
struct ByteWriter {
  var data = Data()

  mutating func append<Integer: FixedWidthInteger>(_ value: Integer) {
    withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
  }

  mutating func append<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
    data.append(contentsOf: bytes)
  }
}

/// Little-endian reads from a byte buffer; every read is bounds-checked by the caller's length checks.
struct ByteReader {
  let bytes: UnsafeRawBufferPointer

  func integer<Integer: FixedWidthInteger>(at offset: Int, as type: Integer.Type = Integer.self) -> Integer {
    Integer(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Integer.self))
  }
}
