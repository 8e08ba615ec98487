import CFFmpeg
import Foundation
import PipelineGraph

/// Transcodes G.711 audio to AAC-LC (MP4 does not carry G.711); other packets pass through unchanged.
///
/// G.711 is decoded (libavcodec), converted to the AAC encoder's planar float (libswresample), gathered
/// into 1024-sample frames and encoded with libavcodec's AAC encoder; each frame leaves in ADTS like the
/// segment format's AAC, timed from the first sample of the stretch.
///
/// Audio is placed by its timestamps: a hole of up to ``maximumSilence`` between records is filled with
/// silence; a longer one (or records that go back in time), a `gap` or a format change ends the stretch
/// (its last frame padded with silence) and the next record starts a new one at its own time. A record
/// that cannot be decoded (a payload that is not a whole number of samples, bytes libavcodec refuses)
/// becomes a `gap` event of the audio track over that record's stretch, reason `mediaUnreadable`, and
/// the stream goes on; an empty record holds no samples and is skipped.
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
    let anchor: MediaTime
    var samplesQueued: Int64 = 0
    /// Samples put into the FIFO (decoded or silence) since `anchor`.
    var samplesIn: Int64 = 0
    /// True when the stretch starts with the stream or after a gap, not after a hole the node itself cut.
    var keepsPriming = true

    /// Where the next record should start if the audio is continuous.
    var expectedTime: MediaTime {
      get throws { try anchor + (try samples(samplesIn)) }
    }

    /// The time `count` samples last.
    func samples(_ count: Int64) throws -> MediaDuration {
      try MediaDuration(
        ticks: count, timeBase: TimeBase(numerator: 1, denominator: Int32(clamping: max(1, input.sampleRate)))!)
    }
    var format: TrackFormat

    init(track: TrackID, input: TrackFormat, anchor: MediaTime) throws {
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
  /// The longest hole between records filled with silence; a longer one starts a new stretch.
  public static let maximumSilence = MediaDuration.microseconds(1_000_000)
  /// Records whose start differs from the continuous position by at most this much are continuous
  /// (record times are whole milliseconds).
  static let jitter = MediaDuration.microseconds(2_000)
  private var chains: [TrackID: Chain] = [:]

  /// Creates a transcoder.
  public init() throws {}

  /// Transcodes G.711; passes everything else.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.format.codec == .g711a || input.format.codec == .g711u else { return context.emit(input) }
    guard !input.data.isEmpty else { return }
    let channels = max(1, input.format.channels)
    guard input.data.count % channels == 0 else {
      return badRecord(
        input, "\(input.data.count) bytes are not a whole number of \(channels)-channel samples", context)
    }
    var restarted = false
    if let chain = chains[input.track] {
      let hole = try input.time - (try chain.expectedTime)
      if chain.input != input.format || hole.microseconds < -Self.jitter.microseconds || hole > Self.maximumSilence {
        try drain(chain, context: context)
        chains[input.track] = nil
        restarted = true
      } else if hole > Self.jitter {
        try queueSilence(
          Int(
            try hole.ticks(in: TimeBase(numerator: 1, denominator: Int32(clamping: max(1, chain.input.sampleRate)))!)),
          in: chain)
      }
    }
    let chain: Chain
    if let existing = chains[input.track] {
      chain = existing
    } else {
      chain = try Chain(track: input.track, input: input.format, anchor: input.time)
      chain.keepsPriming = !restarted
      chains[input.track] = chain
      context.send(.formatChange(FormatChange(track: input.track, format: chain.format, time: input.time)))
    }
    do {
      try decode(input, into: chain)
    } catch let error as TiError {
      // The decoder may be in any state now: end the stretch with what it had, and start afresh.
      try drain(chain, context: context)
      chains[input.track] = nil
      return badRecord(input, error.message, context)
    }
    try encodeFullFrames(chain, context: context)
  }

  private func badRecord(_ input: EncodedPacket, _ why: String, _ context: NodeContext<EncodedPacket>) {
    let samples = Int64(input.data.count / max(1, input.format.channels))
    let duration = MediaDuration.microseconds(max(1000, samples * 1_000_000 / Int64(max(1, input.format.sampleRate))))
    context.send(
      .gap(
        RecordingGap(
          range: MediaRange(
            start: input.time, end: input.time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))),
          tracks: [input.track], reasons: [.mediaUnreadable])))
  }

  /// Appends `count` samples of silence to the chain's FIFO.
  private func queueSilence(_ count: Int, in chain: Chain) throws {
    guard count > 0 else { return }
    // Silence is the same in every plane: one zeroed buffer serves them all.
    let zeros = UnsafeMutablePointer<Float>.allocate(capacity: count)
    zeros.initialize(repeating: 0, count: count)
    defer { zeros.deallocate() }
    var planes = [UnsafeMutableRawPointer?](repeating: UnsafeMutableRawPointer(zeros), count: chain.input.channels)
    let written = av_audio_fifo_write(chain.fifo, &planes, Int32(count))
    try FFmpeg.check(written, "queueing silence", code: .resourceExhausted)
    chain.samplesIn += Int64(count)
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
      chain.samplesIn += Int64(frame.pointer.pointee.nb_samples)
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
      // The encoder's priming frame lies before the stretch's first sample. At the start of a stretch it
      // leaves with it (a writer can hide it with an edit list, so the first samples decode without a
      // fade-in); after a hole inside a stretch it would sit in the hole and is dropped.
      guard pts >= 0 || chain.keepsPriming else { continue }
      guard
        let header = ADTSHeader.make(
          sampleRate: chain.input.sampleRate, channels: chain.input.channels, payloadLength: raw.count)
      else { continue }
      let rate = Int64(chain.input.sampleRate)
      context.emit(
        EncodedPacket(
          track: chain.track, format: chain.format,
          time: try chain.anchor + (try chain.samples(pts)),
          duration: .microseconds(1024 * 1_000_000 / rate), isKeyframe: true, data: header + raw))
    }
  }

  /// A gap ends the stretch: the encoders restart with the next packet.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    switch try MediaEvent(event) {
    case .gap:
      try drainAll(context: context)
    case .formatChange(let change) where change.format.codec == .g711a || change.format.codec == .g711u:
      return  // replaced by the AAC format announced with the first transcoded packet
    default:
      break
    }
    context.send(event)
  }

  private func drainAll(context: NodeContext<EncodedPacket>) throws {
    for chain in chains.values { try drain(chain, context: context) }
    chains.removeAll()
  }

  /// Ends a stretch: the samples short of a whole frame are padded with silence, then the encoder
  /// gives what it holds.
  private func drain(_ chain: Chain, context: NodeContext<EncodedPacket>) throws {
    let frameSize = Int(chain.encoder.pointer.pointee.frame_size)
    let left = Int(av_audio_fifo_size(chain.fifo))
    if left > 0, frameSize > 0 {
      try queueSilence(frameSize - left, in: chain)
      try encodeFullFrames(chain, context: context)
    }
    avcodec_send_frame(chain.encoder.pointer, nil)
    try receive(chain, context: context)
  }

  /// Emits what the encoders still hold.
  public func finish(context: NodeContext<EncodedPacket>) throws { try drainAll(context: context) }

  /// Drops the stretches (a seek).
  public func flush(context: NodeContext<EncodedPacket>) { chains.removeAll() }
}
