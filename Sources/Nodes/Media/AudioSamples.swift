/// The samples of a decoded block of audio, readable only inside the closure that received them
/// (``FrameBuffer/withSamples(_:)``).
public struct AudioSamples {
  /// How samples are stored.
  public enum Layout: Hashable, Sendable {
    /// Signed 16-bit, channels interleaved in one plane.
    case int16
    /// Signed 16-bit, one plane per channel.
    case int16Planar
    /// 32-bit float, channels interleaved in one plane.
    case float
    /// 32-bit float, one plane per channel.
    case floatPlanar
    /// Another format, by libavutil's name.
    case other(String)
  }

  /// The storage.
  public let layout: Layout
  /// Channels.
  public let channels: Int
  /// Samples per channel.
  public let count: Int
  /// Samples per second.
  public let sampleRate: Int
  /// The planes: one (interleaved) or one per channel (planar), each holding exactly its samples.
  public let planes: [UnsafeRawBufferPointer]

  /// Channel `channel`'s samples as 16-bit integers, for the `int16` layouts.
  public func int16(channel: Int) -> [Int16] {
    precondition(channel >= 0 && channel < channels, "channel \(channel) of \(channels)")
    switch layout {
    case .int16:
      let all = planes[0].bindMemory(to: Int16.self)
      return stride(from: channel, to: count * channels, by: channels).map { all[$0] }
    case .int16Planar:
      return Array(planes[channel].bindMemory(to: Int16.self).prefix(count))
    default:
      preconditionFailure("\(layout) is not 16-bit")
    }
  }
}
