internal import CFFmpeg
import PipelineGraph

/// One `AVCodecContext`, owned by this object and freed in `deinit`.
final class CodecContext {
  let pointer: UnsafeMutablePointer<AVCodecContext>
  let codec: UnsafePointer<AVCodec>

  init(codec: UnsafePointer<AVCodec>) throws {
    guard let pointer = avcodec_alloc_context3(codec) else {
      throw MediaError(.resourceExhausted, "avcodec_alloc_context3 failed")
    }
    self.pointer = pointer
    self.codec = codec
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVCodecContext>? = pointer
    avcodec_free_context(&pointer)
  }

  /// Opens the codec with `options` (`key=value` private options such as x264's).
  func open(options: [String: String] = [:]) throws {
    var dictionary: OpaquePointer?
    for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
    defer { av_dict_free(&dictionary) }
    try FFmpeg.check(
      avcodec_open2(pointer, codec, &dictionary), "opening \(String(cString: codec.pointee.name))",
      kind: .unsupportedFormat)
  }

  /// The libavcodec decoder for `codec`.
  static func decoder(for codec: Codec) throws -> UnsafePointer<AVCodec> {
    let id: AVCodecID =
      switch codec {
      case .h264: AV_CODEC_ID_H264
      case .h265: AV_CODEC_ID_HEVC
      case .aac: AV_CODEC_ID_AAC
      case .g711a: AV_CODEC_ID_PCM_ALAW
      case .g711u: AV_CODEC_ID_PCM_MULAW
      }
    guard let decoder = avcodec_find_decoder(id) else {
      throw MediaError.gap(.unsupportedMedia, "this build of libavcodec cannot decode \(codec)")
    }
    return decoder
  }
}
