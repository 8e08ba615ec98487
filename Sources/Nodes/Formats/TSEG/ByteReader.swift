import Foundation

/// Little-endian reads from a byte buffer; every read is bounds-checked by the caller's length checks.
struct ByteReader {
  let bytes: UnsafeRawBufferPointer

  func integer<Integer: FixedWidthInteger>(at offset: Int, as type: Integer.Type = Integer.self) -> Integer {
    Integer(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Integer.self))
  }
}
