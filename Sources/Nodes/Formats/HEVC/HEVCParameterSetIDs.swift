import Foundation

/// The ids an H.265 stream's parameter sets take: each VPS's, each SPS's (and the VPS it refers to),
/// each PPS's (and the SPS it refers to).
///
/// An exact cut re-encodes the edge of a copied stream with libx265, which numbers its sets from 0
/// like almost every camera: two different SPSs under one id in one track. A player that reads the
/// sets from the sample entry only (`hvc1`, as ISO/IEC 14496-15 asks) then decodes one of the two
/// streams against the other's sets. ``HEVCRenumbering`` moves the edge's sets to ids the copied
/// stream leaves free.
package struct HEVCParameterSetIDs: Equatable, Sendable {
  /// VPS ids (0...15).
  package var video = Set<Int>()
  /// SPS ids (0...15).
  package var sequence = Set<Int>()
  /// PPS ids (0...63).
  package var picture = Set<Int>()

  /// The ids of the VPS, SPS and PPS NAL units in `sets` (Annex B). A set too short to read is skipped.
  package init(in sets: Data) {
    for unit in VideoParameterProbe.nalUnits(in: sets) {
      guard unit.count > 2 else { continue }
      var bits = ExpGolombReader(rbsp: unit.dropFirst(2))
      switch HEVCNALUnit.type(of: unit) {
      case HEVCNALUnit.videoParameterSet:
        if let id = bits.bits(4) { video.insert(id) }
      case HEVCNALUnit.sequenceParameterSet:
        guard let vps = bits.bits(4), HEVCNALUnit.skipToSequenceParameterSetID(&bits),
          let id = bits.unsignedExpGolomb()
        else { continue }
        video.insert(vps)
        sequence.insert(id)
      case HEVCNALUnit.pictureParameterSet:
        guard let id = bits.unsignedExpGolomb(), let sps = bits.unsignedExpGolomb() else { continue }
        picture.insert(id)
        sequence.insert(sps)
      default: continue
      }
    }
  }

  package init() {}
}

/// NAL unit types and header fields of H.265 used here.
enum HEVCNALUnit {
  static let videoParameterSet = 32
  static let sequenceParameterSet = 33
  static let pictureParameterSet = 34

  /// The type of a NAL unit (its first two bytes are the header).
  static func type(of unit: Data) -> Int { Int((unit[unit.startIndex] >> 1) & 0x3F) }

  /// Slices (VCL NAL units) are types 0...31; intra random access points 16...23.
  static func isSlice(_ type: Int) -> Bool { type < 32 }

  /// Reads an SPS from after `sps_video_parameter_set_id` to just before `sps_seq_parameter_set_id`
  /// (`sps_max_sub_layers_minus1`, `sps_temporal_id_nesting_flag`, `profile_tier_level`); false when it
  /// is cut short.
  static func skipToSequenceParameterSetID(_ bits: inout ExpGolombReader) -> Bool {
    guard let subLayersMinus1 = bits.bits(3), bits.skip(1) else { return false }
    // general_profile_space … general_level_idc: 96 bits.
    guard bits.skip(96) else { return false }
    var present: [(profile: Bool, level: Bool)] = []
    for _ in 0..<subLayersMinus1 {
      guard let profile = bits.bits(1), let level = bits.bits(1) else { return false }
      present.append((profile == 1, level == 1))
    }
    if subLayersMinus1 > 0 { guard bits.skip(2 * (8 - subLayersMinus1)) else { return false } }
    for layer in present {
      if layer.profile { guard bits.skip(88) else { return false } }
      if layer.level { guard bits.skip(8) else { return false } }
    }
    return true
  }
}
