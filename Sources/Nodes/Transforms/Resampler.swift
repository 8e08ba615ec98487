import CFFmpeg
import PipelineGraph

/// The sample format an audio device takes.
public struct AudioDeviceFormat: Hashable, Sendable {
  /// Samples per second.
  public var sampleRate: Int
  /// Interleaved channels.
  public var channels: Int

  /// Creates a format; samples are interleaved signed 16-bit.
  public init(sampleRate: Int, channels: Int) {
    self.sampleRate = sampleRate
    self.channels = channels
  }
}

/// Converts decoded audio to an audio device's format (rate, channel count, interleaved s16) with
/// libswresample. Reconfigures itself when the input's format changes; timestamps follow the input.
public final class Resampler: Node {
  /// Consumes decoded audio.
  public typealias Input = DecodedFrame
  /// Emits audio in the device's format.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name = "Resampler"
  /// The output format.
  public let format: AudioDeviceFormat
  private var context: OpaquePointer?
  private var inputKey: (rate: Int32, channels: Int32, format: Int32)?

  /// Creates a resampler to `format`.
  public init(to format: AudioDeviceFormat) { self.format = format }

  deinit { swr_free(&context) }

  /// Converts one frame.
  public func process(_ input: DecodedFrame, context nodeContext: NodeContext<DecodedFrame>) throws {
    let source = input.frame.pointer
    let key = (source.pointee.sample_rate, source.pointee.ch_layout.nb_channels, source.pointee.format)
    if inputKey == nil || inputKey! != key { try configure(for: source) }
    let output = try Frame()
    let out = output.pointer
    out.pointee.sample_rate = Int32(format.sampleRate)
    out.pointee.format = AV_SAMPLE_FMT_S16.rawValue
    av_channel_layout_default(&out.pointee.ch_layout, Int32(format.channels))
    out.pointee.nb_samples = Int32(
      av_rescale_rnd(
        swr_get_delay(context, Int64(source.pointee.sample_rate)) + Int64(source.pointee.nb_samples),
        Int64(format.sampleRate), Int64(source.pointee.sample_rate), AV_ROUND_UP))
    try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating resampled audio", code: .resourceExhausted)
    let converted = source.pointee.extended_data.withMemoryRebound(
      to: UnsafePointer<UInt8>?.self, capacity: Int(source.pointee.ch_layout.nb_channels)
    ) { input in
      swr_convert(context, out.pointee.extended_data, out.pointee.nb_samples, input, source.pointee.nb_samples)
    }
    try FFmpeg.check(converted, "resampling audio")
    out.pointee.nb_samples = converted
    guard converted > 0 else { return }
    nodeContext.emit(
      DecodedFrame(
        track: input.track, time: input.time,
        duration: .microseconds(Int64(converted) * 1_000_000 / Int64(format.sampleRate)), frame: output))
  }

  private func configure(for source: UnsafeMutablePointer<AVFrame>) throws {
    swr_free(&context)
    var outputLayout = AVChannelLayout()
    av_channel_layout_default(&outputLayout, Int32(format.channels))
    defer { av_channel_layout_uninit(&outputLayout) }
    try FFmpeg.check(
      swr_alloc_set_opts2(
        &context, &outputLayout, AV_SAMPLE_FMT_S16, Int32(format.sampleRate), &source.pointee.ch_layout,
        AVSampleFormat(rawValue: source.pointee.format), source.pointee.sample_rate, 0, nil),
      "configuring the resampler", code: .unsupportedFormat)
    try FFmpeg.check(swr_init(context), "initializing the resampler", code: .unsupportedFormat)
    inputKey = (source.pointee.sample_rate, source.pointee.ch_layout.nb_channels, source.pointee.format)
  }

  /// Forgets buffered samples (a seek).
  public func flush(context nodeContext: NodeContext<DecodedFrame>) {
    swr_free(&context)
    inputKey = nil
  }
}
