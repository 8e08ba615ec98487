internal import CFFmpeg
import Foundation
import PipelineGraph

/// Encodes a moving test picture with libx264 or libx265: real H.264/H.265 access units in Annex B,
/// parameter sets in-band before every keyframe, no B-frames, keyframes exactly where asked.
package final class TestPatternEncoder {
  package let codec: Codec
  package let width: Int
  package let height: Int
  package let fps: Int
  private let context: CodecContext
  private let frame: FrameBuffer
  private let packet: Packet
  private var frameNumber: Int64 = 0

  package init(codec: Codec, width: Int, height: Int, fps: Int) throws {
    guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
      throw MediaError(.invalidArgument, "video size \(width)x\(height) must be positive and even")
    }
    let name = codec == .h265 ? "libx265" : "libx264"
    guard codec.kind == .video, let encoder = avcodec_find_encoder_by_name(name) else {
      throw MediaError(.unsupportedFormat, "this build of libavcodec has no \(name) encoder")
    }
    self.codec = codec
    self.width = width
    self.height = height
    self.fps = fps
    context = try CodecContext(codec: encoder)
    let c = context.pointer
    c.pointee.width = Int32(width)
    c.pointee.height = Int32(height)
    c.pointee.time_base = AVRational(num: 1, den: Int32(fps))
    c.pointee.framerate = AVRational(num: Int32(fps), den: 1)
    c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
    c.pointee.gop_size = 1 << 20  // keyframes only where forced
    c.pointee.max_b_frames = 0
    c.pointee.thread_count = 1
    var options = ["preset": "ultrafast", "tune": "zerolatency", "forced-idr": "1"]
    if codec == .h265 {
      options["x265-params"] = "log-level=error:scenecut=0:repeat-headers=1:bframes=0"
    } else {
      options["x264-params"] = "scenecut=0:repeat-headers=1"
    }
    try context.open(options: options)
    frame = try FrameBuffer()
    frame.pointer.pointee.width = Int32(width)
    frame.pointer.pointee.height = Int32(height)
    frame.pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    try FFmpeg.check(av_frame_get_buffer(frame.pointer, 0), "allocating a video frame")
    packet = try Packet()
  }

  /// What a picture shows.
  package enum Look {
    /// The moving pattern.
    case pattern
    /// The pattern at half its brightness (a sync beacon between its flashes).
    case dim
    /// Peak white (a sync beacon's flash).
    case flash
  }

  /// Encodes picture number `index` (its content depends on the index, so every frame differs) as
  /// `look` says. Returns the access unit and whether it is a keyframe.
  package func encode(index: Int, keyframe: Bool, look: Look = .pattern) throws -> (data: Data, isKeyframe: Bool) {
    try FFmpeg.check(av_frame_make_writable(frame.pointer), "making a frame writable")
    if look == .flash { paintWhite() } else { paint(index: index, dim: look == .dim) }
    frame.pointer.pointee.pts = frameNumber
    frame.pointer.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
    frameNumber += 1
    try FFmpeg.check(avcodec_send_frame(context.pointer, frame.pointer), "encoding a video frame")
    var result: (Data, Bool)?
    while true {
      let status = avcodec_receive_packet(context.pointer, packet.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { break }
      try FFmpeg.check(status, "receiving an encoded packet")
      let data = Data(bytes: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
      let isKey = packet.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0
      av_packet_unref(packet.pointer)
      guard result == nil else { throw MediaError(.ioFailed, "the encoder delayed a frame (B-frames or lookahead)") }
      result = (data, isKey)
    }
    guard let result else { throw MediaError(.ioFailed, "the encoder delayed a frame (B-frames or lookahead)") }
    return result
  }

  /// Peak white (luma 235, no colour).
  private func paintWhite() {
    let f = frame.pointer.pointee
    for y in 0..<height { memset(f.data.0! + y * Int(f.linesize.0), 235, width) }
    for y in 0..<height / 2 {
      memset(f.data.1! + y * Int(f.linesize.1), 128, width / 2)
      memset(f.data.2! + y * Int(f.linesize.2), 128, width / 2)
    }
  }

  /// A diagonal gradient that scrolls, a bright square that moves, and colour that drifts.
  private func paint(index: Int, dim: Bool) {
    let f = frame.pointer.pointee
    let t = index
    let luma = f.data.0!
    let lumaStride = Int(f.linesize.0)
    let box = (x: (t * 7) % max(1, width - 32), y: (t * 3) % max(1, height - 32))
    for y in 0..<height {
      let row = luma + y * lumaStride
      for x in 0..<width {
        let inBox = x >= box.x && x < box.x + 32 && y >= box.y && y < box.y + 32
        let value = inBox ? 235 : UInt8(truncatingIfNeeded: x + y + t * 4)
        row[x] = dim ? value / 2 : value
      }
    }
    let cb = f.data.1!
    let cr = f.data.2!
    for y in 0..<height / 2 {
      for x in 0..<width / 2 {
        cb[y * Int(f.linesize.1) + x] = UInt8(truncatingIfNeeded: 128 + x / 4 + t)
        cr[y * Int(f.linesize.2) + x] = UInt8(truncatingIfNeeded: 128 + y / 4 - t)
      }
    }
  }
}
