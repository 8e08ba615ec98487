internal import CFFmpeg
import Foundation
import PipelineGraph

/// Reads a keyframe's parameter sets and picture size: NAL units are split here; an H.264 size comes
/// from its sequence parameter set read here (``H264SequenceParameterSet``: a stream copy of H.264 loads
/// no FFmpeg library), an H.265 one from libavcodec's parser (which decodes the SPS, cropping included).
///
/// Like libavcodec's parser, it remembers the parameter sets it saw: a keyframe that repeats none is given
/// the size of the sets its slices refer to, and one whose sets cannot be read keeps the last size. (Unlike
/// it, a picture parameter set stays tied to its SPS id when that SPS changes, and 11- and 13-bit streams,
/// whose picture parameter sets libavcodec refuses, get their size.)
final class VideoParameterProbe {
  private let parser: UnsafeMutablePointer<AVCodecParserContext>?
  private let context: CodecContext?
  let codec: Codec
  /// H.264: each sequence parameter set's picture size by its id, the SPS each picture parameter set
  /// refers to, and the size last found.
  private var sizes: [Int: (width: Int, height: Int)] = [:]
  private var sequenceOfPicture: [Int: Int] = [:]
  private var size = (width: 0, height: 0)

  init(codec: Codec) throws {
    self.codec = codec
    guard codec == .h265 else {
      (parser, context) = (nil, nil)
      return
    }
    guard let parser = av_parser_init(Int32(AV_CODEC_ID_HEVC.rawValue)) else {
      throw MediaError.gap(.unsupportedMedia, "libavcodec has no parser for \(codec)")
    }
    parser.pointee.flags |= PARSER_FLAG_COMPLETE_FRAMES
    self.parser = parser
    context = try CodecContext(codec: try CodecContext.decoder(for: codec))
  }

  deinit { if let parser { av_parser_close(parser) } }

  /// The format a keyframe announces: its parameter sets and picture size.
  ///
  /// Only the access unit's head is examined (parameter sets come before the first slice), so the cost
  /// does not depend on the picture's size.
  func format(ofKeyframe accessUnit: Data) -> TrackFormat {
    let head = Self.head(of: accessUnit, codec: codec)
    if let parser, let context {
      head.withUnsafeBytes { raw in
        guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var output: UnsafeMutablePointer<UInt8>?
        var outputSize: Int32 = 0
        _ = av_parser_parse2(
          parser, context.pointer, &output, &outputSize, base, Int32(raw.count), cff_nopts_value(), cff_nopts_value(),
          0)
        size = (Int(parser.pointee.width), Int(parser.pointee.height))
      }
    } else {
      readH264Size(head)
    }
    return TrackFormat(
      codec: codec, width: size.width, height: size.height, parameterSets: Self.parameterSets(in: head, codec: codec))
  }

  /// Takes in the head's parameter sets, then the size of the sets its first slice refers to (its
  /// `pic_parameter_set_id`, after `first_mb_in_slice` and `slice_type`).
  private func readH264Size(_ head: Data) {
    for unit in Self.nalUnits(in: head) {
      guard let first = unit.first else { continue }
      switch first & 0x1F {
      case 7:
        if let set = H264SequenceParameterSet(unit) { sizes[set.id] = (set.width, set.height) }
      case 8:
        if let (id, sequence) = Self.pictureParameterSetIDs(unit), id < 256, sequence < 32 {
          sequenceOfPicture[id] = sequence
        }
      case 1...5:
        var bits = ExpGolombReader(rbsp: unit.dropFirst())
        if bits.unsignedExpGolomb() != nil, bits.unsignedExpGolomb() != nil, let picture = bits.unsignedExpGolomb(),
          let sequence = sequenceOfPicture[picture], let found = sizes[sequence]
        {
          size = found
        }
        return
      default: continue
      }
    }
  }

  /// The access unit up to and including the first 64 bytes of its first slice (enough for the slice
  /// header the parser reads).
  static func head(of accessUnit: Data, codec: Codec) -> Data {
    var end = accessUnit.endIndex
    accessUnit.withUnsafeBytes { raw in
      guard raw.count > 4 else { return }
      var index = 0
      while index + 3 < raw.count {
        if raw[index] == 0, raw[index + 1] == 0, raw[index + 2] == 1 {
          let header = raw[index + 3]
          let isSlice = codec == .h265 ? (header >> 1) & 0x3F < 32 : (1...5).contains(header & 0x1F)
          if isSlice {
            end = accessUnit.startIndex + min(raw.count, index + 3 + 64)
            return
          }
          index += 3
        } else {
          index += 1
        }
      }
    }
    return accessUnit[accessUnit.startIndex..<end]
  }

  /// The VPS/SPS/PPS NAL units of an Annex B access unit, each behind a 4-byte start code.
  static func parameterSets(in accessUnit: Data, codec: Codec) -> Data {
    var result = Data()
    for unit in nalUnits(in: head(of: accessUnit, codec: codec)) {
      guard let first = unit.first else { continue }
      let isParameterSet =
        codec == .h265 ? (32...34).contains(Int((first >> 1) & 0x3F)) : [7, 8].contains(first & 0x1F)
      if isParameterSet {
        result.append(contentsOf: [0, 0, 0, 1])
        result.append(unit)
      }
    }
    return result
  }

  /// The ids the H.264 SPS and PPS NAL units of `sets` (Annex B) take: each SPS's own, each PPS's own
  /// and the SPS it refers to. A set too short to read is skipped.
  static func h264ParameterSetIDs(in sets: Data) -> Set<Int> {
    var ids = Set<Int>()
    for unit in nalUnits(in: sets) {
      guard let first = unit.first else { continue }
      switch first & 0x1F {
      case 7:
        // profile_idc, constraint flags, level_idc, then seq_parameter_set_id.
        var bits = ExpGolombReader(rbsp: unit.dropFirst())
        guard bits.skip(24), let id = bits.unsignedExpGolomb() else { continue }
        ids.insert(id)
      case 8:
        guard let (id, sps) = pictureParameterSetIDs(unit) else { continue }
        ids.formUnion([id, sps])
      default: continue
      }
    }
    return ids
  }

  /// A picture parameter set NAL unit's `pic_parameter_set_id` and the `seq_parameter_set_id` it
  /// refers to (its first two fields); nil when it is cut short.
  static func pictureParameterSetIDs(_ unit: Data) -> (picture: Int, sequence: Int)? {
    var bits = ExpGolombReader(rbsp: unit.dropFirst())
    guard let picture = bits.unsignedExpGolomb(), let sequence = bits.unsignedExpGolomb() else { return nil }
    return (picture, sequence)
  }

  /// The NAL units of an Annex B stream, without their start codes.
  static func nalUnits(in stream: Data) -> [Data] {
    var units: [Data] = []
    stream.withUnsafeBytes { bytes in
      var index = 0
      var unitStart: Int?
      while index + 2 < bytes.count {
        if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
          if let start = unitStart {
            var end = index
            while end > start, bytes[end - 1] == 0 { end -= 1 }
            units.append(Data(bytes[start..<end]))
          }
          index += 3
          unitStart = index
        } else {
          index += 1
        }
      }
      if let start = unitStart, start < bytes.count { units.append(Data(bytes[start...])) }
    }
    return units
  }
}

/// Reads the bits of a NAL unit's payload (emulation prevention bytes removed): fixed fields and
/// unsigned Exp-Golomb codes, as H.264 and H.265 headers are written.
struct ExpGolombReader {
  /// The payload, emulation prevention bytes removed.
  let bytes: [UInt8]
  /// The next bit to read.
  private(set) var position = 0

  /// A reader of `bytes` (emulation prevention bytes already removed) from bit `position`.
  init(bytes: [UInt8], at position: Int) {
    self.bytes = bytes
    self.position = position
  }

  /// A reader of `payload`, the NAL unit after its header.
  init(rbsp payload: Data) {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(payload.count)
    var zeros = 0
    for byte in payload {
      // 0x000003 carries 0x0000: the 3 is not part of the payload.
      if zeros >= 2, byte == 3 {
        zeros = 0
        continue
      }
      zeros = byte == 0 ? zeros + 1 : 0
      bytes.append(byte)
    }
    self.bytes = bytes
  }

  /// `count` bits (at most 32) as an unsigned number; nil past the end.
  mutating func bits(_ count: Int) -> Int? {
    var value = 0
    for _ in 0..<count {
      guard let next = bit() else { return nil }
      value = value << 1 | next
    }
    return value
  }

  mutating func bit() -> Int? {
    guard position < bytes.count * 8 else { return nil }
    defer { position += 1 }
    return Int(bytes[position / 8] >> (7 - UInt8(position % 8))) & 1
  }

  /// Skips `count` bits; false past the end.
  mutating func skip(_ count: Int) -> Bool {
    guard position + count <= bytes.count * 8 else { return false }
    position += count
    return true
  }

  /// One `ue(v)`; nil past the end or beyond `maximumLeadingZeros` leading zeros (at most 31).
  mutating func unsignedExpGolomb(maximumLeadingZeros: Int = 31) -> Int? {
    var zeros = 0
    while true {
      guard let next = bit() else { return nil }
      if next == 1 { break }
      zeros += 1
      guard zeros <= min(maximumLeadingZeros, 31) else { return nil }
    }
    var value = 0
    for _ in 0..<zeros {
      guard let next = bit() else { return nil }
      value = value << 1 | next
    }
    return (1 << zeros) - 1 + value
  }

  /// One `se(v)`: 1, −1, 2, −2, … for the codes 1, 2, 3, 4, …; nil past the end.
  mutating func signedExpGolomb() -> Int? {
    guard let code = unsignedExpGolomb() else { return nil }
    return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
  }
}
