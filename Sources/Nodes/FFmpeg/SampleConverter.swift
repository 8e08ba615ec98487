internal import CFFmpeg
import PipelineGraph

/// libswresample converting decoded audio to a given rate and channel count — interleaved signed 16-bit
/// for devices and mixers, or another sample format (an encoder's planar float); reconfigures itself
/// when the input's format changes. Owns its `SwrContext`.
final class SampleConverter {
  /// The output format.
  let format: AudioDeviceFormat
  private var context: OpaquePointer?
  private var inputKey: (rate: Int32, channels: Int32, format: Int32)?

  /// The output's sample format.
  let sampleFormat: AVSampleFormat

  /// A converter to `format`, its samples in `sampleFormat`.
  init(to format: AudioDeviceFormat, sampleFormat: AVSampleFormat = AV_SAMPLE_FMT_S16) {
    self.format = format
    self.sampleFormat = sampleFormat
  }

  deinit { swr_free(&context) }

  /// Converts `input`; nil when no sample came out yet (the resampler's delay).
  func convert(_ input: FrameBuffer) throws -> (frame: FrameBuffer, samples: Int)? {
    let source = input.pointer
    let key = (source.pointee.sample_rate, source.pointee.ch_layout.nb_channels, source.pointee.format)
    if inputKey == nil || inputKey! != key { try configure(for: source) }
    let output = try FrameBuffer()
    let out = output.pointer
    out.pointee.sample_rate = Int32(format.sampleRate)
    out.pointee.format = sampleFormat.rawValue
    av_channel_layout_default(&out.pointee.ch_layout, Int32(format.channels))
    out.pointee.nb_samples = Int32(
      av_rescale_rnd(
        swr_get_delay(context, Int64(source.pointee.sample_rate)) + Int64(source.pointee.nb_samples),
        Int64(format.sampleRate), Int64(source.pointee.sample_rate), AV_ROUND_UP))
    try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating resampled audio", kind: .resourceExhausted)
    let converted = source.pointee.extended_data.withMemoryRebound(
      to: UnsafePointer<UInt8>?.self, capacity: Int(source.pointee.ch_layout.nb_channels)
    ) { samples in
      swr_convert(context, out.pointee.extended_data, out.pointee.nb_samples, samples, source.pointee.nb_samples)
    }
    try FFmpeg.check(converted, "resampling audio")
    out.pointee.nb_samples = converted
    return converted > 0 ? (output, Int(converted)) : nil
  }

  /// Forgets buffered samples.
  func reset() {
    swr_free(&context)
    inputKey = nil
  }

  private func configure(for source: UnsafeMutablePointer<AVFrame>) throws {
    // A failed configuration leaves no context: the next frame must configure again.
    inputKey = nil
    swr_free(&context)
    var outputLayout = AVChannelLayout()
    av_channel_layout_default(&outputLayout, Int32(format.channels))
    defer { av_channel_layout_uninit(&outputLayout) }
    try FFmpeg.check(
      swr_alloc_set_opts2(
        &context, &outputLayout, sampleFormat, Int32(format.sampleRate), &source.pointee.ch_layout,
        AVSampleFormat(rawValue: source.pointee.format), source.pointee.sample_rate, 0, nil),
      "configuring the resampler", kind: .unsupportedFormat)
    try FFmpeg.check(swr_init(context), "initializing the resampler", kind: .unsupportedFormat)
    inputKey = (source.pointee.sample_rate, source.pointee.ch_layout.nb_channels, source.pointee.format)
  }
}
