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
