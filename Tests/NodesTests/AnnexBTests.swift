import Foundation
import MediaSynthesis
import Nodes
import Testing

/// ``AnnexB`` finds NAL units with a vector scan for start codes (16 positions at a time,
/// Sources/MediaKernels); libavformat's `ff_avc_parse_nal_units` (the writer it replaced) scans byte by
/// byte. Over random buffers rich in zeros and ones — start codes of three and four bytes, runs of
/// zeros, start codes at both ends — and over long buffers of coded-looking bytes with start codes at
/// every offset of a vector, both must cut the same units.
@Suite("Annex B units as libavformat cuts them")
struct AnnexBTests {
  @Test("the same units as a byte-by-byte port of ff_avc_parse_nal_units, over 20,000 random buffers")
  func sameUnitsAsLibavformat() {
    var generator = SeededGenerator(seed: 0x41_6E_6E_65_78_42)
    for _ in 0..<20_000 {
      let count = Int.random(in: 0...64, using: &generator)
      let bytes = (0..<count).map { _ -> UInt8 in
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<5: 0
        case 5..<7: 1
        default: UInt8.random(in: 0...255, using: &generator)
        }
      }
      let found = bytes.withUnsafeBytes { AnnexB.nalUnits(in: $0) }
      #expect(found == Self.reference(bytes), "\(bytes)")
    }
  }

  @Test("the same units over 3,000 buffers of up to 4 KB with start codes at random places")
  func sameUnitsOverLongBuffers() {
    var generator = SeededGenerator(seed: 0x53_53_45_32)
    for _ in 0..<3_000 {
      let count = Int.random(in: 0...4096, using: &generator)
      // Coded video: zeros no more often than other bytes, pairs of them rare.
      var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
      for _ in 0..<Int.random(in: 0...6, using: &generator) where count >= 4 {
        let at = Int.random(in: 0...(count - 3), using: &generator)
        let code: [UInt8] = Bool.random(using: &generator) && at + 4 <= count ? [0, 0, 0, 1] : [0, 0, 1]
        bytes.replaceSubrange(at..<(at + code.count), with: code)
      }
      let found = bytes.withUnsafeBytes { AnnexB.nalUnits(in: $0) }
      #expect(found == Self.reference(bytes), "\(count) bytes")
    }
  }

  @Test("a start code at each offset of a 16-byte block, and across two blocks, is found")
  func startCodeAtEveryOffset() {
    for offset in 0..<40 {
      var bytes = [UInt8](repeating: 0x5A, count: 48)
      bytes.replaceSubrange(offset..<(offset + 3), with: [0, 0, 1])
      let found = bytes.withUnsafeBytes { AnnexB.nalUnits(in: $0) }
      #expect(found == Self.reference(bytes), "offset \(offset)")
      #expect(found == [(offset + 3)..<48], "offset \(offset)")
    }
  }

  @Test("an access unit of four-byte start codes: each unit without its start code")
  func ordinaryAccessUnit() {
    let bytes: [UInt8] = [0, 0, 0, 1, 0x67, 9, 8, 0, 0, 0, 1, 0x68, 7, 0, 0, 1, 0x65, 1, 2, 3, 0]
    let units = bytes.withUnsafeBytes { AnnexB.nalUnits(in: $0) }
    #expect(units == [4..<7, 11..<13, 16..<21])
  }

  /// `ff_avc_parse_nal_units` and `ff_avc_find_startcode` (libavformat/avc.c), one byte at a time.
  static func reference(_ p: [UInt8]) -> [Range<Int>] {
    let end = p.count
    func findStartCode(_ from: Int) -> Int {
      var out = end
      var i = from
      while i + 3 < end {
        if p[i] == 0, p[i + 1] == 0, p[i + 2] == 1 {
          out = i
          break
        }
        i += 1
      }
      if from < out, out < end, p[out - 1] == 0 { out -= 1 }
      return out
    }
    var units: [Range<Int>] = []
    var start = findStartCode(0)
    while true {
      while start < end {
        let byte = p[start]
        start += 1
        if byte != 0 { break }
      }
      if start == end { break }
      let stop = findStartCode(start)
      units.append(start..<stop)
      start = stop
    }
    return units
  }
}
