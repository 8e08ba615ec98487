internal import CCrypto

/// CRC-32 (IEEE 802.3) as zlib computes it: the checksum of a TSEG header.
public enum CRC32 {
  /// The checksum of `bytes`.
  public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress else { return 0 }
    return UInt32(crc32(0, base.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
  }
}
