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
