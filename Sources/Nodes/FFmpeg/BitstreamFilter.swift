internal import CFFmpeg
import PipelineGraph

/// One bitstream filter (`h264_mp4toannexb`…), owned by this object and freed in `deinit`.
final class BitstreamFilter {
  private var context: UnsafeMutablePointer<AVBSFContext>?

  init(name: String, parameters: UnsafePointer<AVCodecParameters>, timeBase: AVRational) throws {
    guard let filter = av_bsf_get_by_name(name) else {
      throw MediaError.gap(.unsupportedMedia, "libavcodec has no \(name) filter")
    }
    try FFmpeg.check(av_bsf_alloc(filter, &context), "allocating \(name)", kind: .resourceExhausted)
    guard let context else { throw MediaError(.resourceExhausted, "allocating \(name)") }
    try FFmpeg.check(avcodec_parameters_copy(context.pointee.par_in, parameters), "configuring \(name)")
    context.pointee.time_base_in = timeBase
    try FFmpeg.check(av_bsf_init(context), "initializing \(name)", kind: .unsupportedFormat)
  }

  deinit { av_bsf_free(&context) }

  /// Filters `packet` in place (one packet in, one packet out for the Annex B filters).
  func filter(_ packet: UnsafeMutablePointer<AVPacket>) throws {
    guard let context else { return }
    try FFmpeg.check(av_bsf_send_packet(context, packet), "filtering a packet")
    try FFmpeg.check(av_bsf_receive_packet(context, packet), "filtering a packet")
  }

  /// Forgets what the filter kept of the packets before (after one it refused: the next is filtered as
  /// if it came first after a seek).
  func reset() {
    guard let context else { return }
    av_bsf_flush(context)
  }
}
