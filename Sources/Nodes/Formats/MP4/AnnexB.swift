import Foundation
import MediaKernels

/// Where the NAL units of an Annex B access unit are, as an MP4 muxer takes them apart.
///
/// An MP4 sample holds each NAL unit behind its 4-byte length instead of a start code. The units found
/// here are exactly those libavformat's `ff_avc_parse_nal_units` writes (the path every H.264 and H.265
/// stream copy into MP4 took until the export wrote its own fragments): bytes before the first start
/// code are dropped, a zero byte before a start code belongs to it, a unit ends where the next start
/// code begins (trailing zeros beyond that one stay in it), and a start code that ends the buffer starts
/// nothing. The search for start codes is `tipipe_annexb_start_code` (Sources/MediaKernels), which
/// compares 16 positions at once (SSE2): every byte of every picture an export writes passes it.
package enum AnnexB {
  /// The byte ranges (relative to `bytes.startIndex`) of the NAL units in `bytes`.
  package static func nalUnits(in bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
    guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
    let end = bytes.count
    var units: [Range<Int>] = []
    var start = tipipe_annexb_start_code(base, 0, end)
    while true {
      // Past the zeros of the start code and its 0x01 (`while (nal_start < end && !*(nal_start++));`).
      while start < end {
        let byte = base[start]
        start += 1
        if byte != 0 { break }
      }
      if start == end { break }
      let stop = tipipe_annexb_start_code(base, start, end)
      units.append(start..<stop)
      start = stop
    }
    return units
  }
}
