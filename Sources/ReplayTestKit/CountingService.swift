import Nodes
import PipelineGraph
import TiCloudStorage

/// A recording service that forwards to another, notes which objects were fetched, and can hold one
/// fetch to answer it later with an error (a network failure at a chosen object, at a chosen instant).
///
/// Objects are named by their start in ms after ``origin`` (the recording's first instant, so that a
/// test reads `3000` for the second 3 s object). No states; thread-safe.
package final class CountingService: RecordingService {
  private let wrapped: any RecordingService
  private let fetched = Locked<[Int64]>([])
  /// The object whose next fetch is held, and its completion once held.
  private let held = Locked<(start: Int64?, completion: (@Sendable (ObjectFetch) -> Void)?)>((nil, nil))

  /// The instant (UTC ms) object starts are counted from.
  package let origin: Int64
  /// Whether it says it reads local files (a replay then keeps nothing it fetched); by default it stands
  /// for a service of the network, whatever it wraps.
  package let readsLocalFiles: Bool

  /// Forwards to `wrapped`, naming objects by their start after `origin` (UTC ms); `readsLocalFiles` is
  /// what it says of itself.
  package init(_ wrapped: any RecordingService, origin: Int64 = 0, readsLocalFiles: Bool = false) {
    self.wrapped = wrapped
    self.origin = origin
    self.readsLocalFiles = readsLocalFiles
  }

  /// Holds the next fetch of the object starting `start` ms after ``origin`` until ``fail(with:)``.
  package func hold(_ start: Int64) { held.withLock { $0 = (start, nil) } }

  /// Answers the held fetch with `error`; false when no fetch is held.
  package func fail(with error: MediaError) -> Bool {
    guard
      let completion = held.withLock({ held in
        defer { held = (nil, nil) }
        return held.completion
      })
    else { return false }
    completion(.failed(error))
    return true
  }

  /// The wrapped service's endpoint.
  package var endpoint: String { wrapped.endpoint }

  /// The start (ms after ``origin``) of each object fetched, in order.
  package var fetchedStarts: [Int64] { fetched.withLock { $0 } }

  /// Forwards the listing.
  package func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest {
    wrapped.listSegments(in: range, token: token, completion: completion)
  }

  /// Notes the fetch, then holds it (see ``hold(_:)``) or forwards it.
  package func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    let start = segment.startMs - origin
    fetched.withLock { $0.append(start) }
    let holds = held.withLock { held -> Bool in
      guard held.start == start, held.completion == nil else { return false }
      held.completion = completion
      return true
    }
    if holds { return ServiceRequest {} }
    return wrapped.fetchObject(segment, completion: completion)
  }
}
