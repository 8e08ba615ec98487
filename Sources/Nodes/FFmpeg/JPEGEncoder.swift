internal import CFFmpeg
import Foundation
import PipelineGraph

/// A picture as a JPEG: libswscale to full-range 4:2:0, then libavcodec's MJPEG encoder, at the
/// picture's own size. Owns its codec context and scaler.
final class JPEGEncoder {
  private let scaler: PictureScaler

  init() throws {
    scaler = try PictureScaler(to: .yuvj420p, width: nil, height: nil)
  }

  func encode(_ picture: FrameBuffer) throws -> Data {
    guard picture.width > 0, picture.height > 0, picture.pixelFormat != nil else {
      throw MediaError(.invalidArgument, "a JPEG needs a picture, not audio")
    }
    let converted = try scaler.convert(picture)
    guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else {
      throw MediaError(.unsupportedFormat, "this build of libavcodec has no MJPEG encoder")
    }
    let context = try CodecContext(codec: codec)
    let c = context.pointer
    c.pointee.width = Int32(picture.width)
    c.pointee.height = Int32(picture.height)
    c.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
    c.pointee.color_range = AVCOL_RANGE_JPEG
    c.pointee.time_base = AVRational(num: 1, den: 25)
    // Visually lossless enough for a snapshot: a fixed quantizer of 2 (1 is best, 31 worst).
    c.pointee.flags |= AV_CODEC_FLAG_QSCALE
    c.pointee.global_quality = 2 * FF_QP2LAMBDA
    try context.open()
    converted.pointer.pointee.pts = 0
    converted.pointer.pointee.quality = c.pointee.global_quality
    try FFmpeg.check(avcodec_send_frame(c, converted.pointer), "encoding a JPEG")
    try FFmpeg.check(avcodec_send_frame(c, nil), "finishing a JPEG")
    let packet = try Packet()
    try FFmpeg.check(avcodec_receive_packet(c, packet.pointer), "receiving a JPEG")
    defer { av_packet_unref(packet.pointer) }
    return Data(bytes: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
  }
}
