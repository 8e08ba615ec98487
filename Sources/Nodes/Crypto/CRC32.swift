internal import CCrypto

/// CRC-32 (IEEE 802.3) as zlib computes it: the checksum of a TSEG header (shared with the project's
/// other modules, not part of its API).
package enum CRC32 {
  /// The checksum of `bytes`.
  package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress else { return 0 }
    return UInt32(crc32(0, base.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
  }
}
