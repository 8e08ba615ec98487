internal import CFFmpeg
import PipelineGraph

/// One `AVPacket`, owned by this object and freed in `deinit`.
final class Packet {
  let pointer: UnsafeMutablePointer<AVPacket>

  init() throws {
    guard let pointer = av_packet_alloc() else { throw MediaError(.resourceExhausted, "av_packet_alloc failed") }
    self.pointer = pointer
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVPacket>? = pointer
    av_packet_free(&pointer)
  }
}
