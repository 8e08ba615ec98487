internal import CFFmpeg
import Foundation
import PipelineGraph

/// Encodes a tone with libavcodec: AAC-LC (each frame wrapped in ADTS) or G.711 A-law/µ-law.
package final class ToneEncoder {
  package let codec: Codec
  package let sampleRate: Int
  package let channels: Int
  /// Samples per channel in one record.
  package let frameSamples: Int
  /// The encoder's delay in samples (AAC's priming): the first record it returns carries the
  /// `delay` samples before the first one given, so record `n` carries what was given at
  /// `n * frameSamples - delay`.
  package let delay: Int
  private let context: CodecContext
  private let frame: FrameBuffer
  private let packet: Packet
  private var samplesWritten: Int64 = 0

  package init(codec: Codec, sampleRate: Int, channels: Int) throws {
    let name: String =
      switch codec {
      case .aac: "aac"
      case .g711a: "pcm_alaw"
      case .g711u: "pcm_mulaw"
      default: throw MediaError(.invalidArgument, "\(codec) is not an audio codec")
      }
    guard let encoder = avcodec_find_encoder_by_name(name) else {
      throw MediaError(.unsupportedFormat, "this build of libavcodec has no \(name) encoder")
    }
    self.codec = codec
    self.sampleRate = sampleRate
    self.channels = channels
    context = try CodecContext(codec: encoder)
    let c = context.pointer
    c.pointee.sample_rate = Int32(sampleRate)
    c.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
    av_channel_layout_default(&c.pointee.ch_layout, Int32(channels))
    c.pointee.sample_fmt = codec == .aac ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_S16
    if codec == .aac { c.pointee.bit_rate = 32_000 * Int64(channels) }
    try context.open()
    frameSamples = codec == .aac ? Int(c.pointee.frame_size) : sampleRate / 25
    delay = Int(c.pointee.initial_padding)
    frame = try FrameBuffer()
    frame.pointer.pointee.nb_samples = Int32(frameSamples)
    frame.pointer.pointee.format = c.pointee.sample_fmt.rawValue
    frame.pointer.pointee.sample_rate = Int32(sampleRate)
    try FFmpeg.check(av_channel_layout_copy(&frame.pointer.pointee.ch_layout, &c.pointee.ch_layout), "channel layout")
    try FFmpeg.check(av_frame_get_buffer(frame.pointer, 0), "allocating an audio frame")
    packet = try Packet()
  }

  /// Encodes the next `frameSamples` samples of a 440 Hz tone; returns the record payloads produced
  /// (AAC's encoder delay means the first call may return nothing and a later one two).
  ///
  /// With `beaconAt`, the absolute sample number of this call's first sample, the sound is a sync
  /// beacon's instead: a 1 kHz beep in the first tenth of every second of that count, silence between.
  package func encodeNext(beaconAt firstSample: Int64? = nil) throws -> [Data] {
    try FFmpeg.check(av_frame_make_writable(frame.pointer), "making a frame writable")
    let rate = Int64(sampleRate)
    for sample in 0..<frameSamples {
      let value: Double
      if let firstSample {
        let absolute = firstSample + Int64(sample)
        let inBeep = absolute % rate < rate / 10
        value = inBeep ? 0.5 * sin(2 * Double.pi * 1000 * Double(absolute % rate) / Double(rate)) : 0
      } else {
        value = 0.3 * sin(2 * Double.pi * 440 * Double(samplesWritten + Int64(sample)) / Double(sampleRate))
      }
      for channel in 0..<channels {
        if codec == .aac {
          frame.pointer.pointee.extended_data[channel]!.withMemoryRebound(to: Float.self, capacity: frameSamples) {
            $0[sample] = Float(value)
          }
        } else {
          frame.pointer.pointee.data.0!.withMemoryRebound(to: Int16.self, capacity: frameSamples * channels) {
            $0[sample * channels + channel] = Int16(value * 32767)
          }
        }
      }
    }
    frame.pointer.pointee.pts = samplesWritten
    samplesWritten += Int64(frameSamples)
    try FFmpeg.check(avcodec_send_frame(context.pointer, frame.pointer), "encoding audio")
    return try receive()
  }

  /// Ends the sound: returns the records the encoder still holds (the last samples given, padded to a
  /// whole record). Nothing can be encoded after.
  package func finish() throws -> [Data] {
    try FFmpeg.check(avcodec_send_frame(context.pointer, nil), "ending the audio")
    return try receive()
  }

  private func receive() throws -> [Data] {
    var payloads: [Data] = []
    while true {
      let status = avcodec_receive_packet(context.pointer, packet.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { break }
      try FFmpeg.check(status, "receiving encoded audio")
      let raw = Data(bytes: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
      av_packet_unref(packet.pointer)
      if codec == .aac {
        guard let header = ADTSHeader.make(sampleRate: sampleRate, channels: channels, payloadLength: raw.count) else {
          throw MediaError(.unsupportedFormat, "AAC at \(sampleRate) Hz cannot be framed in ADTS")
        }
        payloads.append(header + raw)
      } else {
        payloads.append(raw)
      }
    }
    return payloads
  }
}
