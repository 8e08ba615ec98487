import CFFmpeg
import Foundation
import PipelineGraph

/// Transcodes G.711 audio to AAC-LC (MP4 does not carry G.711); other packets pass through unchanged.
///
/// G.711 is decoded (libavcodec), converted to the AAC encoder's planar float (libswresample), gathered
/// into 1024-sample frames and encoded with libavcodec's AAC encoder; each frame leaves in ADTS like the
/// segment format's AAC, timed from the first sample of the stretch. A `gap` or a format change starts
/// a new stretch (the few samples left over are dropped).
public final class AudioTranscoder: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits packets, G.711 replaced by AAC.
  public typealias Output = EncodedPacket

  private final class Chain {
    let track: TrackID
    let input: TrackFormat
    let decoder: CodecContext
    let encoder: CodecContext
    var resampler: OpaquePointer?
    let fifo: OpaquePointer
    let packet: Packet
    let anchor: Int64
    var samplesQueued: Int64 = 0
    var format: TrackFormat

    init(track: TrackID, input: TrackFormat, anchor: Int64) throws {
      self.track = track
      self.input = input
      self.anchor = anchor
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
      try FFmpeg.check(
        swr_alloc_set_opts2(
          &resampler, &e.pointee.ch_layout, AV_SAMPLE_FMT_FLTP, e.pointee.sample_rate,
          &decoder.pointer.pointee.ch_layout, AV_SAMPLE_FMT_S16, Int32(input.sampleRate), 0, nil),
        "configuring the resampler", code: .unsupportedFormat)
      try FFmpeg.check(swr_init(resampler), "initializing the resampler", code: .unsupportedFormat)
      guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(input.channels), 4096) else {
        throw TiError(.resourceExhausted, "allocating an audio FIFO")
      }
      self.fifo = fifo
      packet = try Packet()
      guard let header = ADTSHeader.make(sampleRate: input.sampleRate, channels: input.channels, payloadLength: 0),
        let adts = ADTSHeader(header)
      else { throw TiError(.unsupportedFormat, "AAC cannot carry \(input.sampleRate) Hz") }
      format = TrackFormat(
        codec: .aac, sampleRate: input.sampleRate, channels: input.channels,
        audioSpecificConfig: adts.audioSpecificConfig)
    }

    deinit {
      swr_free(&resampler)
      av_audio_fifo_free(fifo)
    }
  }

  /// The node's name.
  public let name = "AudioTranscoder"
  private var chains: [TrackID: Chain] = [:]

  /// Creates a transcoder.
  public init() throws {}

  /// Transcodes G.711; passes everything else.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.format.codec == .g711a || input.format.codec == .g711u else { return context.emit(input) }
    var chain = chains[input.track]
    if chain == nil || chain!.input != input.format {
      chain = try Chain(track: input.track, input: input.format, anchor: input.time.microseconds)
      chains[input.track] = chain
      context.send(.formatChange(FormatChange(track: input.track, format: chain!.format, time: input.time)))
    }
    try decode(input, into: chain!)
    try encodeFullFrames(chain!, context: context)
  }

  private func decode(_ input: EncodedPacket, into chain: Chain) throws {
    try FFmpeg.check(av_new_packet(chain.packet.pointer, Int32(input.data.count)), "allocating a packet")
    input.data.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        chain.packet.pointer.pointee.data.update(
          from: base.assumingMemoryBound(to: UInt8.self), count: input.data.count)
      }
    }
    let sent = avcodec_send_packet(chain.decoder.pointer, chain.packet.pointer)
    av_packet_unref(chain.packet.pointer)
    try FFmpeg.check(sent, "decoding G.711", code: .recordingUnreadable)
    while true {
      let frame = try Frame()
      let status = avcodec_receive_frame(chain.decoder.pointer, frame.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      try FFmpeg.check(status, "decoding G.711", code: .recordingUnreadable)
      let converted = try Frame()
      let out = converted.pointer
      out.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
      out.pointee.sample_rate = Int32(chain.input.sampleRate)
      av_channel_layout_default(&out.pointee.ch_layout, Int32(chain.input.channels))
      out.pointee.nb_samples = frame.pointer.pointee.nb_samples + 32
      try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating audio", code: .resourceExhausted)
      let count = frame.pointer.pointee.extended_data.withMemoryRebound(
        to: UnsafePointer<UInt8>?.self, capacity: Int(chain.input.channels)
      ) { source in
        swr_convert(
          chain.resampler, out.pointee.extended_data, out.pointee.nb_samples, source, frame.pointer.pointee.nb_samples)
      }
      try FFmpeg.check(count, "converting audio")
      let written = out.pointee.extended_data.withMemoryRebound(
        to: UnsafeMutableRawPointer?.self, capacity: Int(chain.input.channels)
      ) {
        av_audio_fifo_write(chain.fifo, $0, count)
      }
      try FFmpeg.check(written, "queueing audio", code: .resourceExhausted)
    }
  }

  private func encodeFullFrames(_ chain: Chain, context: NodeContext<EncodedPacket>) throws {
    let frameSize = Int32(chain.encoder.pointer.pointee.frame_size)
    while av_audio_fifo_size(chain.fifo) >= frameSize {
      let frame = try Frame()
      let f = frame.pointer
      f.pointee.nb_samples = frameSize
      f.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
      f.pointee.sample_rate = Int32(chain.input.sampleRate)
      av_channel_layout_default(&f.pointee.ch_layout, Int32(chain.input.channels))
      try FFmpeg.check(av_frame_get_buffer(f, 0), "allocating audio", code: .resourceExhausted)
      _ = f.pointee.extended_data.withMemoryRebound(
        to: UnsafeMutableRawPointer?.self, capacity: Int(chain.input.channels)
      ) {
        av_audio_fifo_read(chain.fifo, $0, frameSize)
      }
      f.pointee.pts = chain.samplesQueued
      chain.samplesQueued += Int64(frameSize)
      try FFmpeg.check(avcodec_send_frame(chain.encoder.pointer, f), "encoding AAC", code: .unsupportedFormat)
      try receive(chain, context: context)
    }
  }

  private func receive(_ chain: Chain, context: NodeContext<EncodedPacket>) throws {
    while true {
      let status = avcodec_receive_packet(chain.encoder.pointer, chain.packet.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      try FFmpeg.check(status, "encoding AAC", code: .unsupportedFormat)
      let p = chain.packet.pointer.pointee
      let raw = Data(bytes: p.data, count: Int(p.size))
      let pts = p.pts
      av_packet_unref(chain.packet.pointer)
      guard
        let header = ADTSHeader.make(
          sampleRate: chain.input.sampleRate, channels: chain.input.channels, payloadLength: raw.count)
      else { continue }
      let rate = Int64(chain.input.sampleRate)
      context.emit(
        EncodedPacket(
          track: chain.track, format: chain.format,
          time: MediaTime(microseconds: chain.anchor + pts * 1_000_000 / rate),
          durationMicroseconds: 1024 * 1_000_000 / rate, isKeyframe: true, data: header + raw))
    }
  }

  /// A gap ends the stretch: the encoders restart with the next packet.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .gap = event { try drainAll(context: context) }
    if case .formatChange(let change as FormatChange) = event,
      change.format.codec == .g711a || change.format.codec == .g711u
    {
      return  // replaced by the AAC format announced with the first transcoded packet
    }
    context.send(event)
  }

  private func drainAll(context: NodeContext<EncodedPacket>) throws {
    for chain in chains.values {
      avcodec_send_frame(chain.encoder.pointer, nil)
      try receive(chain, context: context)
    }
    chains.removeAll()
  }

  /// Emits what the encoders still hold.
  public func finish(context: NodeContext<EncodedPacket>) throws { try drainAll(context: context) }

  /// Drops the stretches (a seek).
  public func flush(context: NodeContext<EncodedPacket>) { chains.removeAll() }
}
