import CFFmpeg
import Foundation
import MediaSynthesis
import Testing

@testable import Nodes

/// ``H264SequenceParameterSet`` replaced libavcodec's parser in reading an H.264 picture's size (a
/// stream copy loads no FFmpeg library): over random parameter sets (every profile's fields, scaling
/// lists, the three picture order types, field coding, cropping in every chroma format) and over those
/// libx264 writes, the size must be the one libavcodec's parser reports, and a set libavcodec refuses
/// must be refused.
@Suite("H.264 sequence parameter sets read as libavcodec reads them")
struct H264SequenceParameterSetTests {
  @Test("random parameter sets: the size libavcodec's parser finds, and the fields written")
  func randomSetsAsLibavcodec() throws {
    var generator = SeededGenerator(seed: 0x53_50_53)
    var refused = 0
    for index in 0..<4_000 {
      let fields = RandomSPS(&generator)
      let unit = fields.unit()
      let judged = try Self.libavcodecSize(sps: unit, spsID: fields.id, frameNumberBits: fields.frameNumberBits)
      let read = H264SequenceParameterSet(Data(unit))
      guard let read else {
        refused += 1
        #expect(judged == nil, "case \(index): refused here, libavcodec read \(String(describing: judged)): \(fields)")
        continue
      }
      #expect(judged == [read.width, read.height], "case \(index): \(fields)")
      #expect(
        [read.profile, read.compatibility, read.level, read.id, read.chromaFormat, read.lumaBitDepth] as [Int]
          == [fields.profile, fields.compatibility, fields.level, fields.id, fields.chromaFormat, fields.bitDepth],
        "case \(index)")
    }
    // The generator makes some sets libavcodec refuses (crops past the picture, deltas out of range…).
    #expect((200...1_500).contains(refused), "\(refused) refused")
  }

  @Test(
    "sets libavcodec refuses are refused",
    arguments: [
      "bit depths differ", "16-bit samples", "frame numbers of 17 bits", "picture order type 3",
      "17 reference frames", "a crop of the whole width", "separate colour planes", "a scaling delta of 128",
      "a picture order cycle of 256", "8,192 macroblocks across",
    ])
  func refusedAsLibavcodecRefuses(_ name: String) throws {
    var fields = RandomSPS.plain
    fields.profile = 100
    switch name {
    case "bit depths differ": fields.chromaDepthDelta = 1
    case "16-bit samples": fields.bitDepth = 16
    case "frame numbers of 17 bits": fields.frameNumberBits = 17
    case "picture order type 3": fields.orderType = 3
    case "17 reference frames": fields.references = 17
    case "a crop of the whole width": fields.crop = [fields.widthInMacroblocks * 8, 0, 0, 0]
    case "separate colour planes": (fields.chromaFormat, fields.separatePlanes) = (3, true)
    case "a scaling delta of 128": fields.scalingDeltas = [[128]]
    case "8,192 macroblocks across": (fields.widthInMacroblocks, fields.mapUnits) = (8_192, 1)
    default: (fields.orderType, fields.orderOffsets) = (1, Array(repeating: 1, count: 258))
    }
    let unit = fields.unit()
    #expect(H264SequenceParameterSet(Data(unit)) == nil, "\(name)")
    #expect(try Self.libavcodecSize(sps: unit, spsID: fields.id, frameNumberBits: fields.frameNumberBits) == nil)
    // The same set without the change is read by both.
    var plain = RandomSPS.plain
    plain.profile = 100
    #expect(H264SequenceParameterSet(Data(plain.unit())) != nil)
  }

  @Test(
    "libx264's keyframes: the probe finds the size libavcodec's parser finds",
    arguments: [
      "-s 1920x1080 -profile:v high", "-s 1366x768 -profile:v main", "-s 322x242 -profile:v baseline",
      "-s 176x144", "-s 640x484 -x264-params interlaced=1", "-s 350x198 -pix_fmt yuv422p10le",
      "-s 250x146 -pix_fmt yuv444p", "-s 130x98 -pix_fmt gray", "-s 720x576 -x264-params cqm=jvt",
    ])
  func libx264(_ options: String) throws {
    let keyframe = try MP4HeaderTests.libx264Keyframe(options)
    let format = try VideoParameterProbe(codec: .h264).format(ofKeyframe: keyframe)
    let judged = try Self.libavcodecSize(accessUnit: keyframe)
    #expect(judged == [format.width, format.height], "\(options)")
    #expect(format.width > 0)
  }

  @Test("a keyframe without parameter sets takes the size of the sets its slice refers to")
  func setsRememberedAcrossKeyframes() throws {
    let probe = try VideoParameterProbe(codec: .h264)
    var small = RandomSPS.plain
    small.id = 3
    var large = RandomSPS.plain
    (large.id, large.widthInMacroblocks) = (5, 40)
    let headers = small.annexB(pictureID: 1) + large.annexB(pictureID: 2)
    #expect(probe.format(ofKeyframe: Data(headers + RandomSPS.slice(pictureID: 1, frameNumberBits: 4))).width == 320)
    #expect(probe.format(ofKeyframe: Data(RandomSPS.slice(pictureID: 2, frameNumberBits: 4))).width == 640)
    #expect(probe.format(ofKeyframe: Data(RandomSPS.slice(pictureID: 1, frameNumberBits: 4))).width == 320)
    // An unknown picture parameter set: the last size stays.
    #expect(probe.format(ofKeyframe: Data(RandomSPS.slice(pictureID: 9, frameNumberBits: 4))).width == 320)
  }

  /// The size (width, height) libavcodec's H.264 parser reports for SPS `sps` followed by a picture parameter set 0 that
  /// refers to it and an IDR slice of that picture parameter set; nil when it reports none.
  static func libavcodecSize(sps: [UInt8], spsID: Int, frameNumberBits: Int) throws -> [Int]? {
    var stream: [UInt8] = [0, 0, 0, 1] + sps
    stream += RandomSPS.picture(id: 0, sequence: spsID)
    stream += RandomSPS.slice(pictureID: 0, frameNumberBits: frameNumberBits)
    return try libavcodecSize(accessUnit: Data(stream))
  }

  static func libavcodecSize(accessUnit: Data) throws -> [Int]? {
    let parser = try #require(av_parser_init(Int32(AV_CODEC_ID_H264.rawValue)))
    defer { av_parser_close(parser) }
    parser.pointee.flags |= PARSER_FLAG_COMPLETE_FRAMES
    let context = try CodecContext(codec: try CodecContext.decoder(for: .h264))
    accessUnit.withUnsafeBytes { raw in
      var output: UnsafeMutablePointer<UInt8>?
      var outputSize: Int32 = 0
      _ = av_parser_parse2(
        parser, context.pointer, &output, &outputSize, raw.baseAddress!.assumingMemoryBound(to: UInt8.self),
        Int32(raw.count), cff_nopts_value(), cff_nopts_value(), 0)
    }
    guard parser.pointee.width > 0 else { return nil }
    return [Int(parser.pointee.width), Int(parser.pointee.height)]
  }
}

/// The fields of an H.264 SPS (7.3.2.1.1), drawn at random, and its NAL unit.
struct RandomSPS: CustomStringConvertible {
  var profile = 66
  var compatibility = 0xC0
  var level = 31
  var id = 0
  var chromaFormat = 1
  var separatePlanes = false
  var bitDepth = 8
  var chromaDepthDelta = 0
  /// Each list written (up to 12), its deltas; a list not written is empty.
  var scalingDeltas: [[Int]]? = nil
  var frameNumberBits = 4
  var orderType = 2
  var orderLSBBits = 4
  var orderOffsets: [Int] = []
  var references = 1
  var widthInMacroblocks = 20
  var mapUnits = 15
  var framesOnly = true
  var crop: [Int]? = nil

  static let plain = RandomSPS()
  static let extendedProfiles = Array(H264SequenceParameterSet.extendedProfiles)

  init() {}

  init<G: RandomNumberGenerator>(_ g: inout G) {
    // 134, 135 and 139 are read as profiles without the extended fields (as libavcodec 5.1 reads them).
    profile = ([66, 77, 88, 134, 135, 139] + Self.extendedProfiles.sorted()).randomElement(using: &g)!
    compatibility = Int.random(in: 0...255, using: &g)
    level = Int.random(in: 0...255, using: &g)
    id = Int.random(in: 0...31, using: &g)
    if Self.extendedProfiles.contains(profile) {
      chromaFormat = Int.random(in: 0...3, using: &g)
      // Not 11 or 13 bits: libavcodec reads such an SPS but refuses every PPS of it (it does not decode them).
      bitDepth = [8, 9, 10, 12, 14].randomElement(using: &g)!
      if Int.random(in: 0..<3, using: &g) == 0 {
        scalingDeltas = (0..<(chromaFormat == 3 ? 12 : 8)).map { list in
          guard Bool.random(using: &g) else { return [] }
          return (0..<(list < 6 ? 16 : 64)).map { _ in
            // Mostly small steps; now and then one that makes the next scale 0 (the rest repeats), or
            // one out of range.
            switch Int.random(in: 0..<40, using: &g) {
            case 0: -8
            case 1: 128
            default: Int.random(in: -20...20, using: &g)
            }
          }
        }
      }
    }
    frameNumberBits = Int.random(in: 4...16, using: &g)
    orderType = Int.random(in: 0...2, using: &g)
    orderLSBBits = Int.random(in: 4...17, using: &g)
    orderOffsets = (0..<Int.random(in: 2...12, using: &g)).map { _ in Int.random(in: -5_000...5_000, using: &g) }
    references = Int.random(in: 0...16, using: &g)
    widthInMacroblocks = Int.random(in: 1...130, using: &g)
    mapUnits = Int.random(in: 1...70, using: &g)
    if Int.random(in: 0..<20, using: &g) == 0 {
      // A picture 8,192 macroblocks wide, or about, and low: libavcodec reads at most 12 leading zeros.
      (widthInMacroblocks, mapUnits) = (Int.random(in: 8_100...8_300, using: &g), Int.random(in: 1...3, using: &g))
    }
    framesOnly = Int.random(in: 0..<4, using: &g) != 0
    if Bool.random(using: &g) {
      // Up to a little past the picture: both must refuse a crop of the whole of it.
      let (across, down) = (widthInMacroblocks * 8, mapUnits * (framesOnly ? 8 : 4))
      crop = [across, across, down, down].map { Int.random(in: 0...max(0, $0 * 11 / 20), using: &g) }
    }
  }

  var description: String {
    "profile \(profile) id \(id) chroma \(chromaFormat) depth \(bitDepth) scaling \(scalingDeltas?.count ?? 0) "
      + "frame# \(frameNumberBits) order \(orderType) refs \(references) \(widthInMacroblocks)x\(mapUnits) "
      + "frames only \(framesOnly) crop \(crop ?? [])"
  }

  /// The SPS NAL unit: header, payload with emulation prevention.
  func unit() -> [UInt8] {
    var w = BitWriter()
    w.bits(profile, 8)
    w.bits(compatibility, 8)
    w.bits(level, 8)
    w.ue(id)
    if Self.extendedProfiles.contains(profile) {
      w.ue(chromaFormat)
      if chromaFormat == 3 { w.bits(separatePlanes ? 1 : 0, 1) }
      w.ue(bitDepth - 8)
      w.ue(bitDepth - 8 + chromaDepthDelta)
      w.bits(0, 1)
      if let scalingDeltas {
        w.bits(1, 1)
        for list in 0..<(chromaFormat == 3 ? 12 : 8) {
          let deltas = list < scalingDeltas.count ? scalingDeltas[list] : []
          w.bits(deltas.isEmpty ? 0 : 1, 1)
          guard !deltas.isEmpty else { continue }
          var (last, next) = (8, 8)
          for index in 0..<(list < 6 ? 16 : 64) {
            if next != 0 {
              let delta = deltas[index % deltas.count]
              w.se(delta)
              next = (last + delta) & 0xFF
            }
            if next != 0 { last = next }
          }
        }
      } else {
        w.bits(0, 1)
      }
    }
    w.ue(frameNumberBits - 4)
    w.ue(orderType)
    switch orderType {
    case 0: w.ue(orderLSBBits - 4)
    case 1:
      w.bits(0, 1)
      w.se(orderOffsets[0])
      w.se(orderOffsets[1])
      w.ue(orderOffsets.count - 2)
      for offset in orderOffsets.dropFirst(2) { w.se(offset) }
    default: break
    }
    w.ue(references)
    w.bits(0, 1)
    w.ue(widthInMacroblocks - 1)
    w.ue(mapUnits - 1)
    w.bits(framesOnly ? 1 : 0, 1)
    if !framesOnly { w.bits(1, 1) }
    w.bits(1, 1)
    if let crop {
      w.bits(1, 1)
      for value in crop { w.ue(value) }
    } else {
      w.bits(0, 1)
    }
    w.bits(0, 1)  // no VUI
    return [0x67] + w.rbsp()
  }

  /// SPS and PPS `pictureID` referring to it, with start codes.
  func annexB(pictureID: Int) -> [UInt8] { [0, 0, 0, 1] + unit() + Self.picture(id: pictureID, sequence: id) }

  /// A picture parameter set (CAVLC, one slice group, QP 26) with its start code.
  static func picture(id: Int, sequence: Int) -> [UInt8] {
    var w = BitWriter()
    w.ue(id)
    w.ue(sequence)
    w.bits(0, 2)  // entropy_coding_mode_flag, bottom_field_pic_order_in_frame_present_flag
    w.ue(0)  // one slice group
    w.ue(0)
    w.ue(0)
    w.bits(0, 3)  // weighted prediction off
    w.se(0)
    w.se(0)
    w.se(0)
    w.bits(0b100, 3)  // deblocking control, no constrained intra, no redundant_pic_cnt
    return [0, 0, 0, 1, 0x68] + w.rbsp()
  }

  /// The head of an IDR I slice of picture parameter set `pictureID`, with its start code.
  static func slice(pictureID: Int, frameNumberBits: Int) -> [UInt8] {
    var w = BitWriter()
    w.ue(0)  // first_mb_in_slice
    w.ue(7)  // I, all slices
    w.ue(pictureID)
    w.bits(0, frameNumberBits)
    w.ue(0)  // idr_pic_id
    for _ in 0..<16 { w.bits(0xA5, 8) }
    return [0, 0, 0, 1, 0x65] + w.rbsp()
  }
}

/// Writes fields, Exp-Golomb codes and the trailing bits of an RBSP, then escapes it.
struct BitWriter {
  private var bytes: [UInt8] = []
  private var used = 0

  mutating func bits(_ value: Int, _ count: Int) {
    for shift in stride(from: count - 1, through: 0, by: -1) {
      if used % 8 == 0 { bytes.append(0) }
      bytes[bytes.count - 1] |= UInt8((value >> shift) & 1) << (7 - UInt8(used % 8))
      used += 1
    }
  }

  mutating func ue(_ value: Int) {
    let code = value + 1
    let length = Int.bitWidth - code.leadingZeroBitCount
    bits(0, length - 1)
    bits(code, length)
  }

  mutating func se(_ value: Int) { ue(value > 0 ? 2 * value - 1 : -2 * value) }

  /// The bytes with the stop bit, aligned, and emulation prevention (a 3 after two zeros before 0…3).
  func rbsp() -> [UInt8] {
    var copy = self
    copy.bits(1, 1)
    while copy.used % 8 != 0 { copy.bits(0, 1) }
    var escaped: [UInt8] = []
    var zeros = 0
    for byte in copy.bytes {
      if zeros >= 2, byte <= 3 {
        escaped.append(3)
        zeros = 0
      }
      escaped.append(byte)
      zeros = byte == 0 ? zeros + 1 : 0
    }
    return escaped
  }
}
