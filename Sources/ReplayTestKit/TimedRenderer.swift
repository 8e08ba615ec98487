import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// A video renderer that notes each frame's media time and the clock instant it was presented at:
/// what a window would have shown, and when.
///
/// No states; thread-safe.
package final class TimedRenderer: VideoRenderer, @unchecked Sendable {
  private let clock: any PipelineClock
  // NSLock (pthread) rather than Synchronization.Mutex, so the thread sanitizer sees the locking.
  private let lock = NSLock()
  private var presented: [(media: Int64, at: Int64)] = []

  /// A renderer that reads instants from `clock` (the replay's).
  package init(clock: any PipelineClock) { self.clock = clock }

  /// Notes the frame.
  package func render(_ frame: DecodedFrame) {
    let now = clock.now.microseconds
    lock.withLock { presented.append((frame.time.microseconds, now)) }
  }

  /// (media µs, clock µs) of each presented frame, in order.
  package var frames: [(media: Int64, at: Int64)] { lock.withLock { presented } }
}
