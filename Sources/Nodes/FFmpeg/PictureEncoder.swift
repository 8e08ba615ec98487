internal import CFFmpeg
import Foundation
import PipelineGraph

/// libx264 or libx265 through libavcodec: decoded pictures in, H.264/H.265 access units out (Annex B,
/// parameter sets in-band before every keyframe, no B-frames, no look-ahead: one picture in, one access
/// unit out). Owns its codec context, packet and scaler.
final class PictureEncoder {
  /// What the encoder makes.
  struct Settings: Sendable, Hashable {
    var codec: Codec
    var width: Int
    var height: Int
    /// x264/x265 constant rate factor (lower is better; 18 is visually lossless for most material).
    var quality: Int
    /// A keyframe at least this often (nil: only where asked).
    var keyframeInterval: MediaDuration?
    /// x264/x265 preset.
    var preset: String
    /// The id of the H.264 SPS and PPS (x264's `sps-id`, 0...31): an edge re-encoded into a copied stream
    /// takes one the stream does not use, so both sets can sit in one sample entry. Ignored for H.265.
    var parameterSetId = 0
    /// The H.264 profile and level to keep to (`profile_idc`, `level_idc` of the stream an edge is
    /// re-encoded into; nil: x264's choice). Ignored for H.265 (libx265 makes Main, as cameras do).
    var h264Profile: H264Profile?
    /// How the pictures are to be shown, as the stream an edge is re-encoded into says it (nil: square
    /// pixels, limited range, colours unsaid).
    var signal: Signal?

    /// x264's name of a profile an 8-bit 4:2:0 encoder can keep to: Baseline (66) and Main (77) as they
    /// are (Constrained Baseline included), High for every other profile.
    static func x264ProfileName(_ profileIDC: Int) -> String {
      switch profileIDC {
      case 66: "baseline"
      case 77: "main"
      default: "high"
      }
    }
  }

  /// How a stream's pictures are shown (what its SPS's video usability information says): the pixels'
  /// shape, full or limited range, the colours' primaries, transfer and matrix. An exact cut's edge says
  /// what the copied stream says: an anamorphic picture is not squashed, a full-range one not re-ranged.
  struct Signal: Sendable, Hashable {
    var sampleAspect: [Int32]
    var fullRange: Bool
    var primaries: UInt32
    var transfer: UInt32
    var matrix: UInt32

    /// What a decoded picture says of itself.
    init(of picture: FrameBuffer) {
      let frame = picture.pointer.pointee
      let aspect = frame.sample_aspect_ratio
      sampleAspect = aspect.num > 0 && aspect.den > 0 ? [aspect.num, aspect.den] : []
      fullRange = frame.color_range == AVCOL_RANGE_JPEG || frame.format == AV_PIX_FMT_YUVJ420P.rawValue
      primaries = frame.color_primaries.rawValue
      transfer = frame.color_trc.rawValue
      matrix = frame.colorspace.rawValue
    }
  }

  /// An H.264 stream's `profile_idc` and `level_idc` (its SPS's second and fourth bytes).
  struct H264Profile: Sendable, Hashable {
    var profile: Int
    var level: Int

    /// The profile and level of the first SPS in `sets` (Annex B); nil without one.
    init?(in sets: Data) {
      guard
        let sps = VideoParameterProbe.nalUnits(in: sets).first(where: { $0.count >= 4 && $0.first! & 0x1F == 7 })
      else { return nil }
      profile = Int(sps[sps.startIndex + 1])
      level = Int(sps[sps.startIndex + 3])
    }
  }

  let settings: Settings
  private let context: CodecContext
  private let packet: Packet
  private var scaler: PictureScaler?
  private var lastKeyframe: MediaTime?

  init(_ settings: Settings) throws {
    guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0 else {
      throw MediaError(.invalidArgument, "video size \(settings.width)x\(settings.height) must be positive and even")
    }
    let name = settings.codec == .h265 ? "libx265" : "libx264"
    guard settings.codec.kind == .video, let encoder = avcodec_find_encoder_by_name(name) else {
      throw MediaError(.unsupportedFormat, "this build of libavcodec has no \(name) encoder")
    }
    self.settings = settings
    context = try CodecContext(codec: encoder)
    let c = context.pointer
    c.pointee.width = Int32(settings.width)
    c.pointee.height = Int32(settings.height)
    c.pointee.time_base = AVRational(num: 1, den: 1_000_000)
    c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
    c.pointee.gop_size = 1 << 20  // keyframes where asked (or at the interval, below)
    c.pointee.max_b_frames = 0
    c.pointee.thread_count = 0
    // Only what departs from x264's defaults (square pixels, limited range, colours unsaid): a square
    // picture's edge said "1:1" where the stream said the same made libavcodec start its decoder afresh
    // at the switch, and an open group's leading pictures lost their references (MediaFileExportTests).
    if let signal = settings.signal {
      if signal.sampleAspect.count == 2, signal.sampleAspect[0] != signal.sampleAspect[1] {
        c.pointee.sample_aspect_ratio = AVRational(num: signal.sampleAspect[0], den: signal.sampleAspect[1])
      }
      if signal.fullRange { c.pointee.color_range = AVCOL_RANGE_JPEG }
      let unsaid = AVCOL_PRI_UNSPECIFIED.rawValue
      if signal.primaries != unsaid { c.pointee.color_primaries = AVColorPrimaries(rawValue: signal.primaries) }
      if signal.transfer != AVCOL_TRC_UNSPECIFIED.rawValue {
        c.pointee.color_trc = AVColorTransferCharacteristic(rawValue: signal.transfer)
      }
      if signal.matrix != AVCOL_SPC_UNSPECIFIED.rawValue {
        c.pointee.colorspace = AVColorSpace(rawValue: signal.matrix)
      }
    }
    var options = [
      "preset": settings.preset, "tune": "zerolatency", "forced-idr": "1",
      "crf": "\(max(0, min(51, settings.quality)))",
    ]
    if settings.codec == .h265 {
      options["x265-params"] = "log-level=error:scenecut=0:repeat-headers=1:bframes=0:open-gop=0"
    } else {
      options["x264-params"] =
        "scenecut=0:repeat-headers=1:open-gop=0:sps-id=\(max(0, min(31, settings.parameterSetId)))"
    }
    if settings.codec == .h264, let kept = settings.h264Profile {
      options["profile"] = Settings.x264ProfileName(kept.profile)
      // level_idc is ten times the level (9 is 1b); x264 takes the same number.
      if kept.level > 0 { options["level"] = "\(kept.level)" }
    }
    try context.open(options: options)
    packet = try Packet()
  }

  /// Encodes `picture` shown at `time`: the access unit and whether it is a keyframe.
  func encode(_ picture: FrameBuffer, at time: MediaTime, keyframe: Bool) throws -> (data: Data, isKeyframe: Bool) {
    var input: FrameBuffer
    let source = picture.pointer.pointee
    // Full-range 4:2:0 (`yuvj420p`) is encoded as it is when the stream is full range: its levels kept.
    let asItIs =
      source.format == AV_PIX_FMT_YUV420P.rawValue
      || (source.format == AV_PIX_FMT_YUVJ420P.rawValue && settings.signal?.fullRange == true)
    if !asItIs || Int(source.width) != settings.width || Int(source.height) != settings.height {
      if scaler == nil {
        scaler = try PictureScaler(to: PixelFormat(name: "yuv420p"), width: settings.width, height: settings.height)
      }
      input = try scaler!.convert(picture)
    } else {
      // A new reference to the same pixels: the picture may be shared (fan-out) and is never written;
      // the fields the encoder reads are set on this frame of our own.
      input = try FrameBuffer()
      try FFmpeg.check(av_frame_ref(input.pointer, picture.pointer), "referencing a picture")
      // The same planes either way: full range is the context's `color_range`, not another format.
      input.pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    }
    var due = lastKeyframe == nil
    if let last = lastKeyframe, let interval = settings.keyframeInterval {
      due = (try? time - last).map { $0 >= interval } ?? true
    }
    let forced = keyframe || due
    input.pointer.pointee.pts = time.microseconds
    input.pointer.pointee.pict_type = forced ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
    try FFmpeg.check(avcodec_send_frame(context.pointer, input.pointer), "encoding a picture", kind: .ioFailed)
    var result: (Data, Bool)?
    while true {
      let status = avcodec_receive_packet(context.pointer, packet.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { break }
      try FFmpeg.check(status, "receiving an encoded picture", kind: .ioFailed)
      let data = Data(bytes: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
      let isKey = packet.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0
      av_packet_unref(packet.pointer)
      guard result == nil else { throw MediaError(.ioFailed, "the encoder gave two access units for one picture") }
      result = (data, isKey)
    }
    guard let result else { throw MediaError(.ioFailed, "the encoder delayed a picture") }
    if result.1 { lastKeyframe = time }
    return result
  }
}
