import Foundation
import PipelineGraph

/// What a ``Valve`` lets through, decided elsewhere in the graph — by a node that looks at the decoded
/// pictures of the same stream — and how far the decisions go.
///
/// The deciding node calls ``decide(_:keep:)`` for each stretch it has judged, in time order (a picture:
/// its time and duration), and ``finish()`` at its end of stream; the valve lets media through once its
/// time is decided. Thread-safe: the decider and the valve may run on different threads (a thread
/// boundary between the branches).
public final class ValveDecisions: @unchecked Sendable {
  // NSLock (pthread) rather than Synchronization.Mutex, so the thread sanitizer sees the locking.
  private let lock = NSLock()
  private var kept: [MediaRange] = []
  private var through: MediaTime?
  private var finished = false
  private var listener: (@Sendable () -> Void)?

  /// Stretches closer than this are one (pictures' times are rounded to the container's time base).
  static let tolerance = MediaDuration.microseconds(1_000)

  /// Creates an empty set of decisions.
  public init() {}

  /// `range` is decided: kept or not. Ranges come in time order; a range before what is already
  /// decided changes nothing.
  public func decide(_ range: MediaRange, keep: Bool) {
    let notify: (@Sendable () -> Void)? = lock.withLock {
      guard !finished, through.map({ range.end > $0 }) ?? true else { return nil }
      let start = max(range.start, through ?? range.start)
      if keep {
        if let last = kept.last, start <= last.end.advanced(by: Self.tolerance, notAfter: MediaTime(microseconds: .max))
        {
          kept[kept.count - 1] = MediaRange(start: last.start, end: max(last.end, range.end))
        } else {
          kept.append(MediaRange(start: start, end: range.end))
        }
      }
      through = range.end
      return listener
    }
    notify?()
  }

  /// Everything is decided: what was not kept is dropped.
  public func finish() {
    let notify: (@Sendable () -> Void)? = lock.withLock {
      guard !finished else { return nil }
      finished = true
      return listener
    }
    notify?()
  }

  /// The stretches kept so far.
  public var keptRanges: [MediaRange] { lock.withLock { kept } }

  /// How far the decisions go, and whether they are all taken.
  var state: (kept: [MediaRange], through: MediaTime?, finished: Bool) {
    lock.withLock { (kept, through, finished) }
  }

  /// `body` runs after every decision (from the decider's thread).
  func listen(_ body: @escaping @Sendable () -> Void) { lock.withLock { listener = body } }

  /// Forgets the listener (its valve stopped).
  func stopListening() { lock.withLock { listener = nil } }
}
