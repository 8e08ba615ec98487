internal import CFFmpeg
import Foundation
import PipelineGraph

/// Finds the order in which the pictures of a raw H.264/H.265 stream are shown, by decoding them.
///
/// A raw elementary stream has no timestamps, and with B-frames its pictures are shown in an order only
/// the bitstream's picture order counts give; libavformat's parsers do not compute them. The decoder
/// does: it returns pictures in the order they are shown. Each packet goes in numbered (its *serial*,
/// as the packet's pts), and the n-th picture that comes out is shown n-th: that is its *rank*. The
/// pixels are not needed, so the loop filter is skipped. Owns its codec context, packet and frame.
final class PresentationOrder {
  /// How many packets past a packet without a picture the decoder may take before that packet is taken
  /// to be one it dropped (a leading picture whose references are missing): more than any decoded
  /// picture buffer holds (16 in both codecs).
  static let horizon: Int64 = 32

  private let context: CodecContext
  private let packet: Packet
  private let frame: FrameBuffer
  /// Ranks of the pictures decoded and not yet asked for, by serial.
  private var ranks: [Int64: Int64] = [:]
  /// Pictures decoded so far: the rank of the next one.
  private var shown: Int64 = 0

  /// Opens a decoder for `codec` (H.264 or H.265).
  init(codec: Codec) throws {
    context = try CodecContext(codec: try CodecContext.decoder(for: codec))
    context.pointer.pointee.thread_count = 1
    context.pointer.pointee.skip_loop_filter = AVDISCARD_ALL
    try context.open()
    packet = try Packet()
    frame = try FrameBuffer()
  }

  /// Decodes one packet of the stream, numbered `serial` (0, 1, 2… in the order they are read).
  /// A packet the decoder refuses is left without a rank (the picture is broken for any decoder).
  func decode(_ data: Data, serial: Int64) throws {
    let size = data.count
    try FFmpeg.check(av_new_packet(packet.pointer, Int32(size)), "allocating a packet", kind: .resourceExhausted)
    defer { av_packet_unref(packet.pointer) }
    data.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        packet.pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: size)
      }
    }
    packet.pointer.pointee.pts = serial
    // The decoder holds at most its reorder depth: a packet it cannot take yet is never the case with
    // one thread, and an error only spoils this picture.
    _ = avcodec_send_packet(context.pointer, packet.pointer)
    collect()
  }

  /// Tells the decoder the stream ended: the pictures it still holds get their ranks.
  func finish() {
    avcodec_send_packet(context.pointer, nil)
    collect()
  }

  /// The rank of the packet numbered `serial`, once its picture came out (asked once: it is forgotten).
  func takeRank(of serial: Int64) -> Int64? { ranks.removeValue(forKey: serial) }

  /// Starts again at serial 0 (after a seek back to the start).
  func reset() {
    avcodec_flush_buffers(context.pointer)
    ranks.removeAll()
    shown = 0
  }

  private func collect() {
    while avcodec_receive_frame(context.pointer, frame.pointer) >= 0 {
      let serial = frame.pointer.pointee.pts
      av_frame_unref(frame.pointer)
      guard serial != cff_nopts_value() else { continue }
      ranks[serial] = shown
      shown += 1
    }
  }
}
