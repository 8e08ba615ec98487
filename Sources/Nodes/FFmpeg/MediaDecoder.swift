internal import CFFmpeg
import Foundation
import PipelineGraph

/// A libavcodec decoder for one track format (H.264, H.265, AAC, G.711): packets in, frames out. Owns
/// its `AVCodecContext` and `AVPacket`; packet times travel in microseconds.
final class MediaDecoder {
  /// The format it was opened for.
  let format: TrackFormat
  private let context: CodecContext
  private let packet: Packet

  /// Opens a decoder for `format` with `threads` decoding threads.
  init(format: TrackFormat, threads: Int) throws {
    self.format = format
    context = try CodecContext(codec: try CodecContext.decoder(for: format.codec))
    let c = context.pointer
    c.pointee.thread_count = Int32(threads)
    c.pointee.pkt_timebase = AVRational(num: 1, den: 1_000_000)
    if format.codec.kind == .audio {
      c.pointee.sample_rate = Int32(format.sampleRate)
      av_channel_layout_default(&c.pointee.ch_layout, Int32(format.channels))
    }
    try context.open()
    packet = try Packet()
  }

  /// Sends one packet.
  /// - Throws: ``MediaError`` `unreadableMedia` (`mediaUnreadable`) when libavcodec refuses it.
  func send(_ input: EncodedPacket) throws {
    let size = input.data.count
    // An empty packet would be libavcodec's end of stream (the decoder would take nothing after it).
    guard size > 0 else { return }
    try FFmpeg.check(av_new_packet(packet.pointer, Int32(size)), "allocating a packet", kind: .resourceExhausted)
    defer { av_packet_unref(packet.pointer) }
    input.data.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        packet.pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: size)
      }
    }
    packet.pointer.pointee.pts = input.time.microseconds
    packet.pointer.pointee.dts = input.decodeTime.microseconds
    packet.pointer.pointee.duration = input.duration.microseconds
    if input.isKeyframe { packet.pointer.pointee.flags |= AV_PKT_FLAG_KEY }
    // libavcodec decodes a hidden packet and drops its frame (as ffmpeg shows an edit list's cut).
    if input.isHidden { packet.pointer.pointee.flags |= AV_PKT_FLAG_DISCARD }
    // The samples an edit list hides at the packet's start: libavcodec drops them and moves the frame's
    // time to its first sample shown (skip samples: 32-bit little-endian count, padding, two reasons).
    if input.hiddenSamples > 0, let side = av_packet_new_side_data(packet.pointer, AV_PKT_DATA_SKIP_SAMPLES, 10) {
      let count = UInt32(clamping: input.hiddenSamples)
      for index in 0..<10 { side[index] = index < 4 ? UInt8(truncatingIfNeeded: count >> (8 * UInt32(index))) : 0 }
    }
    let sent = avcodec_send_packet(context.pointer, packet.pointer)
    if sent < 0 && sent != FFmpeg.again {
      throw MediaError(
        .unreadableMedia, "\(input.track) at \(input.time): \(FFmpeg.message(for: sent))",
        gapReason: .mediaUnreadable, cause: FFmpeg.failure(sent))
    }
  }

  /// Tells the decoder no more packets come: ``receive(_:)`` then gives what it still holds.
  func sendEndOfStream() { avcodec_send_packet(context.pointer, nil) }

  /// Forgets every packet and frame it holds, and the end of stream, keeping the open codec and its
  /// threads (`avcodec_flush_buffers`): decoding restarts at a keyframe, as after opening — without
  /// libavcodec's allocation of a new context, its threads and its frame pool (a few ms for H.264,
  /// paid at every gap of previews that read one object a minute).
  func reset() { avcodec_flush_buffers(context.pointer) }

  /// Hands `deliver` each frame decoded so far, with its time and duration, as it comes: a failure
  /// after some frames has not lost them.
  /// - Throws: ``MediaError`` `unreadableMedia` (`mediaUnreadable`) when decoding fails (the frames
  ///   after the failing one are still there for the next call), or what `deliver` throws.
  func receive(_ deliver: (MediaTime, MediaDuration, FrameBuffer) throws -> Void) throws {
    while true {
      let frame = try FrameBuffer()
      let status = avcodec_receive_frame(context.pointer, frame.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      if status < 0 {
        throw MediaError(
          .unreadableMedia, "decoding \(format): \(FFmpeg.message(for: status))", gapReason: .mediaUnreadable,
          cause: FFmpeg.failure(status))
      }
      let pts = frame.pointer.pointee.best_effort_timestamp
      let time = MediaTime(microseconds: pts == cff_nopts_value() ? frame.pointer.pointee.pts : pts)
      try deliver(time, .microseconds(frame.pointer.pointee.pkt_duration), frame)
    }
  }
}
