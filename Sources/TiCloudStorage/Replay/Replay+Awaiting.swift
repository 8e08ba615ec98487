import Foundation
import Nodes
import PipelineGraph

/// Awaiting a play's end with Swift concurrency.
extension Replay {
  /// Plays `range` as ``play(_:from:token:)`` does and
  /// returns when the play has ended: ``Ending/completed`` at the end of the range (after `onCompleted`
  /// was delivered), ``Ending/stopped`` when ``stop()`` or another play ended it first. Its failure
  /// (`onError`'s error) and a refused play (`invalidArgument`, `notBound`) are thrown. Cancelling the
  /// awaiting task stops the play. The callbacks are delivered as usual meanwhile.
  package func play(_ range: MediaRange, from initial: MediaTime? = nil, token: String) async throws -> Ending {
    let stream = AsyncStream<Result<Ending, TiError>>.makeStream(bufferingPolicy: .bufferingOldest(1))
    let awaited = Locked<Int?>(nil)
    let code = begin(
      range, from: initial, token: token,
      waiter: Waiter(
        started: { number in awaited.withLock { $0 = number } },
        end: { result in
          stream.continuation.yield(result)
          stream.continuation.finish()
        }))
    guard code == .ok else { throw TiError(code, "the play was refused") }
    let outcome = await withTaskCancellationHandler {
      var iterator = stream.stream.makeAsyncIterator()
      return await iterator.next()
    } onCancel: { [weak self] in
      guard let self, let number = awaited.withLock({ $0 }) else { return }
      if playNumber.load(ordering: .acquiring) == number { stop() }
    }
    guard let outcome else { return .stopped }
    return try outcome.get()
  }

  /// How an awaited play ended.
  package enum Ending: Sendable, Equatable {
    /// The range was played to its end (`onCompleted`).
    case completed
    /// ``stop()``, another play, or the awaiting task's cancellation ended it first.
    case stopped
  }

  /// One awaiting an async play's end.
  struct Waiter {
    /// Told the play's number, on the control executor, when the play is accepted.
    let started: @Sendable (Int) -> Void
    /// Told the ending, once.
    let end: @Sendable (Result<Ending, TiError>) -> Void
  }
}
