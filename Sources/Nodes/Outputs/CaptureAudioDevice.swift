import PipelineGraph

/// A device that records what it was asked to play (for tests).
///
/// No lifecycle; thread-safe (a lock guards what it records): play and read from any thread.
public final class CaptureAudioDevice: AudioDevice {
  private let state = Locked<[(time: Int64, samples: Int, volume: Int)]>([])

  /// Creates a capturing device.
  public init() {}

  /// Records the frame's time, sample count and volume.
  public func play(_ frame: DecodedFrame, volume: Int) {
    state.withLock { $0.append((frame.time.microseconds, frame.frame.sampleCount, volume)) }
  }

  /// What was played: media time (µs), samples and volume of each frame.
  public var played: [(time: Int64, samples: Int, volume: Int)] { state.withLock { $0 } }
}
