import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// An audio device that notes each frame's media time, samples, volume and the clock instant it was
/// played at: what a speaker would have played, and when.
///
/// No states; thread-safe.
package final class TimedAudioDevice: AudioDevice, @unchecked Sendable {
  private let clock: any PipelineClock
  // NSLock (pthread) rather than Synchronization.Mutex, so the thread sanitizer sees the locking.
  private let lock = NSLock()
  private var frames: [(time: Int64, samples: Int, volume: Int, at: Int64)] = []

  /// A device that reads instants from `clock` (the replay's).
  package init(clock: any PipelineClock) { self.clock = clock }

  /// Notes the frame.
  package func play(_ frame: DecodedFrame, volume: Int) {
    let now = clock.now.microseconds
    lock.withLock { frames.append((frame.time.microseconds, frame.frame.sampleCount, volume, now)) }
  }

  /// Media time (µs), samples and volume of each frame played, in order.
  package var played: [(time: Int64, samples: Int, volume: Int)] {
    lock.withLock { frames.map { ($0.time, $0.samples, $0.volume) } }
  }
  /// (media µs, clock µs) of each frame played, in order.
  package var instants: [(media: Int64, at: Int64)] { lock.withLock { frames.map { ($0.time, $0.at) } } }

  /// The clock instant (µs) at which media time `media` (µs) was heard, from the last frame played at or
  /// before it, when that frame (of `frameLength` µs: 64 ms for the fixtures' AAC) holds it; else nil.
  package func heard(at media: Int64, frameLength: Int64 = 64_000) -> Int64? {
    guard let frame = instants.last(where: { $0.media <= media }), media - frame.media < frameLength else {
      return nil
    }
    return frame.at + (media - frame.media)
  }
}
