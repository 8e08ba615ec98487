import Nodes
import PipelineGraph
import TiCloudStorage

/// What a replay under test reported through its callbacks, in order.
///
/// No states; thread-safe: the replay appends from wherever its environment delivers, the test reads.
package final class ReplayLog: Sendable {
  /// One callback.
  package enum Entry: Equatable, Sendable {
    /// `onTimeChanged` with the position.
    case time(MediaTime)
    /// `onRecordingGap`.
    case gap(RecordingGap)
    /// `onCompleted`.
    case completed
    /// `onError` with the error's code.
    case error(TiErrorCode)
  }

  private let storage = Locked<[Entry]>([])

  /// An empty log.
  package init() {}

  /// Notes one callback.
  package func append(_ entry: Entry) { storage.withLock { $0.append(entry) } }
  /// Every callback so far, in order.
  package var entries: [Entry] { storage.withLock { $0 } }
  /// The positions reported, in order, in UTC ms (as the facade reports them: expectations read as the
  /// seed's rules are written).
  package var times: [Int64] { entries.compactMap { if case .time(let time) = $0 { time.milliseconds } else { nil } } }
  /// The gaps reported, in order.
  package var gaps: [RecordingGap] { entries.compactMap { if case .gap(let gap) = $0 { gap } else { nil } } }
  /// How many times `onCompleted` ran.
  package var completions: Int { entries.count { $0 == .completed } }
  /// The codes `onError` got, in order.
  package var errors: [TiErrorCode] { entries.compactMap { if case .error(let code) = $0 { code } else { nil } } }

  /// Sets `replay`'s four play callbacks to note into this log (and nothing else).
  package func observe(_ replay: Replay) {
    replay.onTimeChanged = { [self] in append(.time($0)) }
    replay.onRecordingGap = { [self] in append(.gap($0)) }
    replay.onCompleted = { [self] in append(.completed) }
    replay.onError = { [self] in append(.error($0.code)) }
  }
}
