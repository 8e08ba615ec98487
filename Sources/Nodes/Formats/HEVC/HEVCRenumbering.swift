import Foundation

/// Moves an H.265 stream's parameter sets to other ids: its VPS, SPS and PPS NAL units and every
/// slice's reference to its PPS are rewritten (see ``HEVCParameterSetIDs`` for why).
///
/// A slice header names its PPS in an Exp-Golomb code before anything else that depends on it, but
/// the slice data after the header must stay byte-aligned: a PPS id is only moved to one whose code
/// is longer by a whole number of bytes (0 → 15…30), so the rest of the slice is copied bit for bit
/// at the same alignment. Parameter sets are rewritten whole and their trailing bits redone.
package struct HEVCRenumbering: Sendable {
  /// New VPS, SPS and PPS ids by old id; an id not listed keeps its number.
  package private(set) var video: [Int: Int] = [:]
  package private(set) var sequence: [Int: Int] = [:]
  package private(set) var picture: [Int: Int] = [:]

  /// Moves the ids of `own` that `taken` uses to ids neither uses. An id with no free number left
  /// keeps its own (the stream is then as it was).
  package init(moving own: HEVCParameterSetIDs, awayFrom taken: HEVCParameterSetIDs) {
    video = Self.moves(own.video, taken.video, within: 0...15) { _, _ in true }
    sequence = Self.moves(own.sequence, taken.sequence, within: 0...15) { _, _ in true }
    picture = Self.moves(own.picture, taken.picture, within: 0...63) { old, new in
      (Self.codeLength(new) - Self.codeLength(old)) % 8 == 0
    }
  }

  /// True when nothing moves.
  package var isIdentity: Bool { video.isEmpty && sequence.isEmpty && picture.isEmpty }

  private static func moves(
    _ own: Set<Int>, _ taken: Set<Int>, within ids: ClosedRange<Int>, fits: (Int, Int) -> Bool
  ) -> [Int: Int] {
    var used = own.union(taken)
    var moves: [Int: Int] = [:]
    for old in own.sorted() where taken.contains(old) {
      guard let new = ids.first(where: { !used.contains($0) && fits(old, $0) }) else { continue }
      used.insert(new)
      moves[old] = new
    }
    return moves
  }

  /// Bits of `ue(v)` for `value`.
  static func codeLength(_ value: Int) -> Int {
    var zeros = 0
    while (value + 1) >> (zeros + 1) > 0 { zeros += 1 }
    return 2 * zeros + 1
  }

  /// `accessUnit` (Annex B) with its parameter sets and slices renumbered; other NAL units unchanged.
  package func apply(to accessUnit: Data) -> Data {
    guard !isIdentity else { return accessUnit }
    var output = Data(capacity: accessUnit.count + 16)
    for unit in VideoParameterProbe.nalUnits(in: accessUnit) {
      output.append(contentsOf: [0, 0, 0, 1])
      output.append(rewrite(unit) ?? unit)
    }
    return output
  }

  /// One NAL unit renumbered; nil when it needs no change or cannot be read (kept as it is).
  private func rewrite(_ unit: Data) -> Data? {
    guard unit.count > 2 else { return nil }
    let type = HEVCNALUnit.type(of: unit)
    var bits = ExpGolombReader(rbsp: unit.dropFirst(2))
    var out = BitWriter()
    switch type {
    case HEVCNALUnit.videoParameterSet:
      guard let id = bits.bits(4), let new = video[id] else { return nil }
      out.write(new, bits: 4)
      out.copy(from: &bits, upTo: bits.bytes.count * 8)
    case HEVCNALUnit.sequenceParameterSet:
      guard let vps = bits.bits(4) else { return nil }
      let afterVPS = bits.position
      guard HEVCNALUnit.skipToSequenceParameterSetID(&bits) else { return nil }
      let idStart = bits.position
      guard let id = bits.unsignedExpGolomb(), video[vps] != nil || sequence[id] != nil else { return nil }
      out.write(video[vps] ?? vps, bits: 4)
      var header = ExpGolombReader(bytes: bits.bytes, at: afterVPS)
      out.copy(from: &header, upTo: idStart)
      out.writeExpGolomb(sequence[id] ?? id)
      out.copyEndingTrailingBits(from: &bits)
    case HEVCNALUnit.pictureParameterSet:
      guard let id = bits.unsignedExpGolomb(), let sps = bits.unsignedExpGolomb(),
        picture[id] != nil || sequence[sps] != nil
      else { return nil }
      out.writeExpGolomb(picture[id] ?? id)
      out.writeExpGolomb(sequence[sps] ?? sps)
      out.copyEndingTrailingBits(from: &bits)
    case let slice where HEVCNALUnit.isSlice(slice):
      // first_slice_segment_in_pic_flag, no_output_of_prior_pics_flag (random access points only).
      let flags = (16...23).contains(slice) ? 2 : 1
      guard let head = bits.bits(flags), let id = bits.unsignedExpGolomb(), let new = picture[id] else { return nil }
      out.write(head, bits: flags)
      out.writeExpGolomb(new)
      // The code grew by whole bytes: the rest (slice data, byte-aligned) keeps its alignment.
      out.copy(from: &bits, upTo: bits.bytes.count * 8)
    default:
      return nil
    }
    return unit.prefix(2) + out.escaped()
  }
}

/// Writes bits most significant first, for rewriting NAL unit payloads.
struct BitWriter {
  private(set) var bytes: [UInt8] = []
  private var count = 0

  /// Appends the low `bits` bits of `value`.
  mutating func write(_ value: Int, bits: Int) {
    for shift in stride(from: bits - 1, through: 0, by: -1) { append((value >> shift) & 1) }
  }

  /// Appends `ue(v)`.
  mutating func writeExpGolomb(_ value: Int) {
    let length = HEVCRenumbering.codeLength(value)
    write(value + 1, bits: length)
  }

  private mutating func append(_ bit: Int) {
    if count % 8 == 0 { bytes.append(0) }
    if bit != 0 { bytes[bytes.count - 1] |= 0x80 >> UInt8(count % 8) }
    count += 1
  }

  /// Copies `reader`'s bits up to bit `end`; whole bytes at once once both sides are aligned.
  mutating func copy(from reader: inout ExpGolombReader, upTo end: Int) {
    while reader.position < end, reader.position % 8 != 0 || count % 8 != 0 {
      guard let bit = reader.bit() else { return }
      append(bit)
    }
    guard reader.position < end else { return }
    let wholeBytes = (end - reader.position) / 8
    let start = reader.position / 8
    bytes.append(contentsOf: reader.bytes[start..<start + wholeBytes])
    count += wholeBytes * 8
    _ = reader.skip(wholeBytes * 8)
    while reader.position < end, let bit = reader.bit() { append(bit) }
  }

  /// Copies the rest of a parameter set up to its `rbsp_stop_one_bit` (the last 1), then writes the
  /// stop bit and zeros to the next byte.
  mutating func copyEndingTrailingBits(from reader: inout ExpGolombReader) {
    let stop = reader.bytes.lastIndex { $0 != 0 }.map { index in
      index * 8 + 7 - reader.bytes[index].trailingZeroBitCount
    }
    copy(from: &reader, upTo: max(reader.position, stop ?? reader.position))
    append(1)
    while count % 8 != 0 { append(0) }
  }

  /// The bytes with emulation prevention: a 0x03 after two zero bytes before any byte ≤ 3.
  func escaped() -> Data {
    var data = Data(capacity: bytes.count + bytes.count / 64)
    var zeros = 0
    for byte in bytes {
      if zeros >= 2 && byte <= 3 {
        data.append(3)
        zeros = 0
      }
      data.append(byte)
      zeros = byte == 0 ? zeros + 1 : 0
    }
    return data
  }
}
