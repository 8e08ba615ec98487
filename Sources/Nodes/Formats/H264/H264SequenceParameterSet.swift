import Foundation

/// What an H.264 sequence parameter set (ITU-T H.264 7.3.2.1.1) says about the pictures that follow it:
/// the profile and level an `avcC` box repeats, the chroma format and bit depths, and the picture's
/// size after cropping.
///
/// Read here, not by libavcodec's parser, so that a stream copy (an export) of H.264 needs no FFmpeg
/// library at all (loading them costs ~25 ms a process). Up to the cropping it accepts what libavcodec's
/// SPS decoder accepts and refuses what it refuses (`ff_h264_decode_seq_parameter_set`: identifiers, bit
/// depths, frame-number and POC limits, scaling deltas, the picture size — `get_ue_golomb` takes at most
/// 12 leading zeros, so 8,192 macroblocks across or down are refused —, crop values larger than the
/// picture), with two exceptions: the VUI after the cropping is not read (a malformed one that libavcodec
/// refuses is taken here: a stream copy does not need it), and SPS ids 32 to 34, which libavcodec's
/// 9-bit table reads as 31, are refused. `H264SequenceParameterSetTests` compares the two over random
/// parameter sets and over libx264's.
struct H264SequenceParameterSet: Equatable {
  /// `profile_idc`.
  var profile: Int
  /// The six constraint flags and two reserved bits, as the `avcC` box repeats them.
  var compatibility: Int
  /// `level_idc`.
  var level: Int
  /// `seq_parameter_set_id` (0...31).
  var id: Int
  /// `chroma_format_idc`: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
  var chromaFormat: Int
  /// Bits per luma sample.
  var lumaBitDepth: Int
  /// Bits per chroma sample.
  var chromaBitDepth: Int
  /// The picture's width in pixels, after cropping.
  var width: Int
  /// The picture's height in pixels (a frame's, for field coding), after cropping.
  var height: Int

  /// The profiles whose SPS carries the chroma format, bit depths and scaling matrices, as libavcodec 5.1
  /// (the decoder these streams meet) lists them: 7.3.2.1.1's but for the multi-resolution and depth
  /// profiles 134, 135 and 139, and with 144, the withdrawn High 4:4:4.
  static let extendedProfiles: Set<Int> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 144]

  /// Parses `unit`, an SPS NAL unit with its one-byte header (emulation prevention bytes in place);
  /// nil when it is not an SPS, is cut short, or says what libavcodec would refuse.
  init?(_ unit: Data) {
    guard let header = unit.first, header & 0x1F == 7 else { return nil }
    var bits = ExpGolombReader(rbsp: unit.dropFirst())
    guard let profile = bits.bits(8), let compatibility = bits.bits(8), let level = bits.bits(8),
      let id = bits.unsignedExpGolomb(), id < 32
    else { return nil }
    var chromaFormat = 1
    var lumaDepth = 8
    var chromaDepth = 8
    if Self.extendedProfiles.contains(profile) {
      guard let format = bits.unsignedExpGolomb(), format <= 3 else { return nil }
      // Separate colour planes: libavcodec does not decode them.
      if format == 3 { guard bits.bit() == 0 else { return nil } }
      guard let luma = bits.unsignedExpGolomb(), let chroma = bits.unsignedExpGolomb(), luma == chroma, luma <= 6,
        bits.skip(1),  // qpprime_y_zero_transform_bypass_flag
        Self.skipScalingMatrices(&bits, chromaFormat: format)
      else { return nil }
      (chromaFormat, lumaDepth, chromaDepth) = (format, luma + 8, chroma + 8)
    }
    guard let frameNumber = bits.unsignedExpGolomb(), frameNumber <= 12, let order = bits.unsignedExpGolomb()
    else { return nil }
    switch order {
    case 0:
      guard let lsb = bits.unsignedExpGolomb(), lsb <= 12 else { return nil }
    case 1:
      guard bits.skip(1), bits.signedExpGolomb() != nil, bits.signedExpGolomb() != nil,
        let cycle = bits.unsignedExpGolomb(), cycle < 256
      else { return nil }
      for _ in 0..<cycle {
        guard bits.signedExpGolomb() != nil else { return nil }
      }
    case 2: break
    default: return nil
    }
    guard let references = bits.unsignedExpGolomb(), references <= 16, bits.skip(1),
      let widthInMacroblocks = bits.unsignedExpGolomb(maximumLeadingZeros: 12).map({ $0 + 1 }),
      let mapUnits = bits.unsignedExpGolomb(maximumLeadingZeros: 12).map({ $0 + 1 }),
      let framesOnly = bits.bit()
    else { return nil }
    let heightInMacroblocks = mapUnits * (2 - framesOnly)
    guard framesOnly == 1 || bits.skip(1), bits.skip(1) else { return nil }  // mb_adaptive…, direct_8x8…
    guard widthInMacroblocks < Int(Int32.max) / 16, heightInMacroblocks < Int(Int32.max) / 16 else { return nil }
    // av_image_check_size: (w + 128) * (h + 128) < INT_MAX / 8.
    let (codedWidth, codedHeight) = (16 * widthInMacroblocks, 16 * heightInMacroblocks)
    guard (codedWidth + 128) * (codedHeight + 128) < Int(Int32.max) / 8 else { return nil }
    var (width, height) = (codedWidth, codedHeight)
    guard let cropped = bits.bit() else { return nil }
    if cropped == 1 {
      guard let left = bits.unsignedExpGolomb(maximumLeadingZeros: 12),
        let right = bits.unsignedExpGolomb(maximumLeadingZeros: 12),
        let top = bits.unsignedExpGolomb(maximumLeadingZeros: 12),
        let bottom = bits.unsignedExpGolomb(maximumLeadingZeros: 12)
      else { return nil }
      // Crop units (Table 6-1): chroma samples across, and frame rows down for field coding.
      let stepX = chromaFormat == 1 || chromaFormat == 2 ? 2 : 1
      let stepY = (2 - framesOnly) * (chromaFormat == 1 ? 2 : 1)
      let limit = Int(Int32.max) / 4
      guard left <= limit / stepX, right <= limit / stepX, top <= limit / stepY, bottom <= limit / stepY,
        (left + right) * stepX < width, (top + bottom) * stepY < height
      else { return nil }
      width -= (left + right) * stepX
      height -= (top + bottom) * stepY
    }
    self.profile = profile
    self.compatibility = compatibility
    self.level = level
    self.id = id
    self.chromaFormat = chromaFormat
    self.lumaBitDepth = lumaDepth
    self.chromaBitDepth = chromaDepth
    self.width = width
    self.height = height
  }

  /// Reads past `seq_scaling_matrix_present_flag` and the lists it announces (7.3.2.1.1.1); false when
  /// they are cut short or a delta is out of range (libavcodec refuses those).
  private static func skipScalingMatrices(_ bits: inout ExpGolombReader, chromaFormat: Int) -> Bool {
    guard let present = bits.bit() else { return false }
    guard present == 1 else { return true }
    for list in 0..<(chromaFormat == 3 ? 12 : 8) {
      guard let listPresent = bits.bit() else { return false }
      guard listPresent == 1 else { continue }
      var (last, next) = (8, 8)
      for _ in 0..<(list < 6 ? 16 : 64) {
        if next != 0 {
          guard let delta = bits.signedExpGolomb(), (-128...127).contains(delta) else { return false }
          next = (last + delta) & 0xFF
        }
        if next != 0 { last = next }
      }
    }
    return true
  }
}
