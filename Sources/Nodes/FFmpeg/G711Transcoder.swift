internal import CFFmpeg
import Foundation
import PipelineGraph

/// G.711 in, AAC-LC out, for one stretch of one track's audio: libavcodec's G.711 decoder, libswresample
/// to the AAC encoder's planar float, a sample FIFO gathering 1024-sample frames, libavcodec's AAC
/// encoder. Owns every C object of the chain and frees them in `deinit`.
///
/// Sample positions count from the stretch's first sample: ``samplesIn`` is what went in (decoded or
/// silence); each encoded frame carries the position of its first sample (the encoder's priming frame
/// lies before 0).
final class G711Transcoder {
  /// The G.711 format decoded.
  let input: TrackFormat
  /// The AAC format encoded (with its AudioSpecificConfig).
  let output: TrackFormat
  /// Samples put in so far, decoded or silence.
  private(set) var samplesIn: Int64 = 0
  private var samplesQueued: Int64 = 0
  private let decoder: CodecContext
  private let encoder: CodecContext
  private var resampler: OpaquePointer?
  private let fifo: OpaquePointer
  private let packet: Packet

  /// Opens the chain for G.711 audio in `input`'s rate and channels.
  init(input: TrackFormat) throws {
    self.input = input
    decoder = try CodecContext(codec: try CodecContext.decoder(for: input.codec))
    decoder.pointer.pointee.sample_rate = Int32(input.sampleRate)
    av_channel_layout_default(&decoder.pointer.pointee.ch_layout, Int32(input.channels))
    try decoder.open()
    guard let aac = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
      throw TiError(.unsupportedFormat, "this build of libavcodec has no AAC encoder")
    }
    encoder = try CodecContext(codec: aac)
    let e = encoder.pointer
    e.pointee.sample_rate = Int32(input.sampleRate)
    e.pointee.time_base = AVRational(num: 1, den: Int32(input.sampleRate))
    e.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
    e.pointee.bit_rate = 32_000 * Int64(input.channels)
    av_channel_layout_default(&e.pointee.ch_layout, Int32(input.channels))
    try encoder.open()
    guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(input.channels), 4096) else {
      throw TiError(.resourceExhausted, "allocating an audio FIFO")
    }
    self.fifo = fifo
    packet = try Packet()
    guard let header = ADTSHeader.make(sampleRate: input.sampleRate, channels: input.channels, payloadLength: 0),
      let adts = ADTSHeader(header)
    else { throw TiError(.unsupportedFormat, "AAC cannot carry \(input.sampleRate) Hz") }
    output = TrackFormat(
      codec: .aac, sampleRate: input.sampleRate, channels: input.channels, audioSpecificConfig: adts.audioSpecificConfig
    )
    try FFmpeg.check(
      swr_alloc_set_opts2(
        &resampler, &e.pointee.ch_layout, AV_SAMPLE_FMT_FLTP, e.pointee.sample_rate,
        &decoder.pointer.pointee.ch_layout, AV_SAMPLE_FMT_S16, Int32(input.sampleRate), 0, nil),
      "configuring the resampler", code: .unsupportedFormat)
    try FFmpeg.check(swr_init(resampler), "initializing the resampler", code: .unsupportedFormat)
  }

  deinit {
    swr_free(&resampler)
    av_audio_fifo_free(fifo)
  }

  /// Decodes one G.711 record into the FIFO.
  /// - Throws: ``TiError`` `recordingUnreadable` when libavcodec refuses the bytes.
  func decode(_ payload: Data) throws {
    try FFmpeg.check(av_new_packet(packet.pointer, Int32(payload.count)), "allocating a packet")
    payload.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        packet.pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: payload.count)
      }
    }
    let sent = avcodec_send_packet(decoder.pointer, packet.pointer)
    av_packet_unref(packet.pointer)
    try FFmpeg.check(sent, "decoding G.711", code: .recordingUnreadable)
    while true {
      let frame = try FrameBuffer()
      let status = avcodec_receive_frame(decoder.pointer, frame.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      try FFmpeg.check(status, "decoding G.711", code: .recordingUnreadable)
      let converted = try FrameBuffer()
      let out = converted.pointer
      out.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
      out.pointee.sample_rate = Int32(input.sampleRate)
      av_channel_layout_default(&out.pointee.ch_layout, Int32(input.channels))
      out.pointee.nb_samples = frame.pointer.pointee.nb_samples + 32
      try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating audio", code: .resourceExhausted)
      let count = frame.pointer.pointee.extended_data.withMemoryRebound(
        to: UnsafePointer<UInt8>?.self, capacity: Int(input.channels)
      ) { source in
        swr_convert(
          resampler, out.pointee.extended_data, out.pointee.nb_samples, source, frame.pointer.pointee.nb_samples)
      }
      try FFmpeg.check(count, "converting audio")
      let written = out.pointee.extended_data.withMemoryRebound(
        to: UnsafeMutableRawPointer?.self, capacity: Int(input.channels)
      ) {
        av_audio_fifo_write(fifo, $0, count)
      }
      try FFmpeg.check(written, "queueing audio", code: .resourceExhausted)
      samplesIn += Int64(frame.pointer.pointee.nb_samples)
    }
  }

  /// Appends `count` samples of silence.
  func queueSilence(_ count: Int) throws {
    guard count > 0 else { return }
    // Silence is the same in every plane: one zeroed buffer serves them all.
    let zeros = UnsafeMutablePointer<Float>.allocate(capacity: count)
    zeros.initialize(repeating: 0, count: count)
    defer { zeros.deallocate() }
    var planes = [UnsafeMutableRawPointer?](repeating: UnsafeMutableRawPointer(zeros), count: input.channels)
    let written = av_audio_fifo_write(fifo, &planes, Int32(count))
    try FFmpeg.check(written, "queueing silence", code: .resourceExhausted)
    samplesIn += Int64(count)
  }

  /// Encodes every whole frame in the FIFO; returns the AAC frames completed (raw, no ADTS header) with
  /// the sample position of their first sample.
  func encodeFullFrames() throws -> [(position: Int64, data: Data)] {
    var encoded: [(position: Int64, data: Data)] = []
    let frameSize = encoder.pointer.pointee.frame_size
    while av_audio_fifo_size(fifo) >= frameSize {
      let frame = try FrameBuffer()
      let f = frame.pointer
      f.pointee.nb_samples = frameSize
      f.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
      f.pointee.sample_rate = Int32(input.sampleRate)
      av_channel_layout_default(&f.pointee.ch_layout, Int32(input.channels))
      try FFmpeg.check(av_frame_get_buffer(f, 0), "allocating audio", code: .resourceExhausted)
      _ = f.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: Int(input.channels)) {
        av_audio_fifo_read(fifo, $0, frameSize)
      }
      f.pointee.pts = samplesQueued
      samplesQueued += Int64(frameSize)
      try FFmpeg.check(avcodec_send_frame(encoder.pointer, f), "encoding AAC", code: .unsupportedFormat)
      encoded += try receive()
    }
    return encoded
  }

  /// Ends the stretch: the samples short of a whole frame are padded with silence, then the encoder
  /// gives what it holds.
  func drain() throws -> [(position: Int64, data: Data)] {
    var encoded: [(position: Int64, data: Data)] = []
    let frameSize = Int(encoder.pointer.pointee.frame_size)
    let left = Int(av_audio_fifo_size(fifo))
    if left > 0, frameSize > 0 {
      try queueSilence(frameSize - left)
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
      try FFmpeg.check(status, "encoding AAC", code: .unsupportedFormat)
      let p = packet.pointer.pointee
      encoded.append((p.pts, Data(bytes: p.data, count: Int(p.size))))
      av_packet_unref(packet.pointer)
    }
  }
}
