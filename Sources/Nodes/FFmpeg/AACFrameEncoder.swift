internal import CFFmpeg
import Foundation
import PipelineGraph

/// Decoded audio in any sample format, rate and channel count → AAC-LC: libswresample to the encoder's
/// planar float (mono stays mono, more than two channels are mixed down to stereo, a rate ADTS cannot
/// carry becomes 48 kHz), a sample FIFO gathering 1024-sample frames, libavcodec's AAC encoder. Owns
/// every C object of the chain and frees them in `deinit`.
///
/// Sample positions count from the first sample put in; each encoded frame carries the position of its
/// first sample (the encoder's priming frame lies before 0).
final class AACFrameEncoder {
  /// The AAC format encoded (with its AudioSpecificConfig).
  let output: TrackFormat
  /// Samples per channel in one AAC frame.
  let frameSamples: Int
  /// Samples put in so far, at the output rate.
  private(set) var samplesIn: Int64 = 0
  private var samplesQueued: Int64 = 0
  private let encoder: CodecContext
  /// Any decoded audio to the encoder's rate, channels and planar float.
  private let converter: SampleConverter
  private let fifo: OpaquePointer
  private let packet: Packet

  /// The output rate for input at `sampleRate`: itself when ADTS can carry it, else 48 kHz.
  static func outputRate(for sampleRate: Int) -> Int {
    ADTSHeader.sampleRates.contains(sampleRate) ? sampleRate : 48_000
  }

  /// Opens an encoder for audio of `sampleRate` with `channels` (the first frame's).
  init(sampleRate: Int, channels: Int, bitRate: Int? = nil) throws {
    guard sampleRate > 0, channels > 0 else {
      throw MediaError(.invalidArgument, "audio of \(sampleRate) Hz with \(channels) channels cannot be encoded")
    }
    let rate = Self.outputRate(for: sampleRate)
    let outChannels = min(channels, 2)
    guard let aac = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
      throw MediaError(.unsupportedFormat, "this build of libavcodec has no AAC encoder")
    }
    encoder = try CodecContext(codec: aac)
    let e = encoder.pointer
    e.pointee.sample_rate = Int32(rate)
    e.pointee.time_base = AVRational(num: 1, den: Int32(rate))
    e.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
    e.pointee.bit_rate = Int64(bitRate ?? 64_000 * outChannels)
    av_channel_layout_default(&e.pointee.ch_layout, Int32(outChannels))
    try encoder.open()
    frameSamples = Int(e.pointee.frame_size)
    converter = SampleConverter(
      to: AudioDeviceFormat(sampleRate: rate, channels: outChannels), sampleFormat: AV_SAMPLE_FMT_FLTP)
    packet = try Packet()
    guard let header = ADTSHeader.make(sampleRate: rate, channels: outChannels, payloadLength: 0),
      let adts = ADTSHeader(header)
    else { throw MediaError(.unsupportedFormat, "AAC cannot carry \(rate) Hz") }
    output = TrackFormat(
      codec: .aac, sampleRate: rate, channels: outChannels, audioSpecificConfig: adts.audioSpecificConfig)
    // Allocated last: an initializer that throws after it would never run `deinit` to free it.
    guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(outChannels), 4096) else {
      throw MediaError(.resourceExhausted, "allocating an audio FIFO")
    }
    self.fifo = fifo
  }

  deinit { av_audio_fifo_free(fifo) }

  /// Converts one decoded frame into the FIFO (the resampler is set up again when the input's format
  /// changes).
  func put(_ input: FrameBuffer) throws {
    let source = input.pointer
    guard source.pointee.nb_samples > 0, source.pointee.sample_rate > 0 else { return }
    guard let (converted, count) = try converter.convert(input) else { return }
    let out = converted.pointer
    let channels = output.channels
    let written = out.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: channels) {
      av_audio_fifo_write(fifo, $0, Int32(count))
    }
    try FFmpeg.check(written, "queueing audio", kind: .resourceExhausted)
    samplesIn += Int64(count)
  }

  /// Appends `count` samples of silence.
  func putSilence(_ count: Int) throws {
    guard count > 0 else { return }
    // Silence is the same in every plane: one zeroed buffer serves them all.
    let zeros = UnsafeMutablePointer<Float>.allocate(capacity: count)
    zeros.initialize(repeating: 0, count: count)
    defer { zeros.deallocate() }
    var planes = [UnsafeMutableRawPointer?](repeating: UnsafeMutableRawPointer(zeros), count: output.channels)
    try FFmpeg.check(av_audio_fifo_write(fifo, &planes, Int32(count)), "queueing silence", kind: .resourceExhausted)
    samplesIn += Int64(count)
  }

  /// Encodes every whole frame in the FIFO; returns the AAC frames completed (raw, no ADTS header) with
  /// the sample position of their first sample.
  func encodeFullFrames() throws -> [(position: Int64, data: Data)] {
    var encoded: [(position: Int64, data: Data)] = []
    let frameSize = Int32(frameSamples)
    while av_audio_fifo_size(fifo) >= frameSize {
      let frame = try FrameBuffer()
      let f = frame.pointer
      f.pointee.nb_samples = frameSize
      f.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
      f.pointee.sample_rate = Int32(output.sampleRate)
      av_channel_layout_default(&f.pointee.ch_layout, Int32(output.channels))
      try FFmpeg.check(av_frame_get_buffer(f, 0), "allocating audio", kind: .resourceExhausted)
      _ = f.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: output.channels) {
        av_audio_fifo_read(fifo, $0, frameSize)
      }
      f.pointee.pts = samplesQueued
      samplesQueued += Int64(frameSize)
      try FFmpeg.check(avcodec_send_frame(encoder.pointer, f), "encoding AAC", kind: .unsupportedFormat)
      encoded += try receive()
    }
    return encoded
  }

  /// Ends the stream: the samples short of a whole frame are padded with silence, then the encoder
  /// gives what it holds. The encoder takes nothing afterwards.
  func drain() throws -> [(position: Int64, data: Data)] {
    var encoded: [(position: Int64, data: Data)] = []
    let left = Int(av_audio_fifo_size(fifo))
    if left > 0 {
      try putSilence(frameSamples - left)
      encoded += try encodeFullFrames()
    }
    avcodec_send_frame(encoder.pointer, nil)
    return encoded + (try receive())
  }

  private func receive() throws -> [(position: Int64, data: Data)] {
    var encoded: [(position: Int64, data: Data)] = []
    while true {
      let status = avcodec_receive_packet(encoder.pointer, packet.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return encoded }
      try FFmpeg.check(status, "encoding AAC", kind: .unsupportedFormat)
      let p = packet.pointer.pointee
      encoded.append((p.pts, Data(bytes: p.data, count: Int(p.size))))
      av_packet_unref(packet.pointer)
    }
  }
}
