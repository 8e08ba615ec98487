internal import CFFmpeg
import Foundation
import PipelineGraph

/// G.711 in, AAC-LC out, for one stretch of one track's audio: libavcodec's G.711 decoder feeding an
/// ``AACFrameEncoder`` (libswresample, a FIFO of 1024-sample frames, libavcodec's AAC encoder at the
/// G.711 rate, 32 kb/s a channel). Owns its decoder and encoder.
///
/// Sample positions count from the stretch's first sample: ``samplesIn`` is what went in (decoded or
/// silence); each encoded frame carries the position of its first sample (the encoder's priming frame
/// lies before 0).
final class G711Transcoder {
  /// The G.711 format decoded.
  let input: TrackFormat
  /// The AAC format encoded (with its AudioSpecificConfig).
  var output: TrackFormat { encoder.output }
  /// Samples put in so far, decoded or silence.
  var samplesIn: Int64 { encoder.samplesIn }
  private let decoder: CodecContext
  private let encoder: AACFrameEncoder
  private let packet: Packet

  /// Opens the chain for G.711 audio in `input`'s rate and channels.
  init(input: TrackFormat) throws {
    self.input = input
    decoder = try CodecContext(codec: try CodecContext.decoder(for: input.codec))
    decoder.pointer.pointee.sample_rate = Int32(input.sampleRate)
    av_channel_layout_default(&decoder.pointer.pointee.ch_layout, Int32(input.channels))
    try decoder.open()
    guard AACFrameEncoder.outputRate(for: input.sampleRate) == input.sampleRate, input.channels <= 2 else {
      throw MediaError(.unsupportedFormat, "AAC cannot carry \(input.sampleRate) Hz ×\(input.channels)")
    }
    encoder = try AACFrameEncoder(
      sampleRate: input.sampleRate, channels: input.channels, bitRate: 32_000 * input.channels)
    packet = try Packet()
  }

  /// Decodes one G.711 record into the encoder's FIFO.
  /// - Throws: ``MediaError`` `unreadableMedia` when libavcodec refuses the bytes.
  func decode(_ payload: Data) throws {
    // An empty packet would be libavcodec's end of stream (the decoder would take nothing after it).
    guard !payload.isEmpty else { return }
    try FFmpeg.check(av_new_packet(packet.pointer, Int32(payload.count)), "allocating a packet")
    payload.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        packet.pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: payload.count)
      }
    }
    let sent = avcodec_send_packet(decoder.pointer, packet.pointer)
    av_packet_unref(packet.pointer)
    try FFmpeg.check(sent, "decoding G.711", kind: .unreadableMedia)
    while true {
      let frame = try FrameBuffer()
      let status = avcodec_receive_frame(decoder.pointer, frame.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      try FFmpeg.check(status, "decoding G.711", kind: .unreadableMedia)
      try encoder.put(frame)
    }
  }

  /// Appends `count` samples of silence.
  func queueSilence(_ count: Int) throws { try encoder.putSilence(count) }

  /// Encodes every whole frame queued; returns the AAC frames completed (raw, no ADTS header) with the
  /// sample position of their first sample.
  func encodeFullFrames() throws -> [(position: Int64, data: Data)] { try encoder.encodeFullFrames() }

  /// Ends the stretch: the samples short of a whole frame are padded with silence, then the encoder
  /// gives what it holds.
  func drain() throws -> [(position: Int64, data: Data)] { try encoder.drain() }
}
