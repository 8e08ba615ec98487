import PipelineGraph

/// Converts decoded audio to an audio device's format (rate, channel count, interleaved s16) with
/// libswresample. Reconfigures itself when the input's format changes; timestamps follow the input.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush drops the buffered samples.
public final class Resampler: Node {
  /// Consumes decoded audio.
  public typealias Input = DecodedFrame
  /// Emits audio in the device's format.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name = "Resampler"
  /// The output format.
  public let format: AudioDeviceFormat
  private let converter: SampleConverter

  /// Creates a resampler to `format`.
  public init(to format: AudioDeviceFormat) {
    self.format = format
    converter = SampleConverter(to: format)
  }

  /// Converts one frame.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard let (frame, samples) = try converter.convert(input.frame) else { return }
    context.emit(
      DecodedFrame(
        track: input.track, time: input.time,
        duration: .microseconds(Int64(samples) * 1_000_000 / Int64(format.sampleRate)), frame: frame))
  }

  /// Forgets buffered samples (a seek).
  public func flush(context: NodeContext<DecodedFrame>) { converter.reset() }
}
