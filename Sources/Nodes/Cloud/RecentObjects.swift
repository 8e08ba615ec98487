import Foundation
import PipelineGraph
import Synchronization

/// A recording service that keeps the objects last fetched through it and hands them out again instead
/// of fetching them: a graph built again for the same play (a change of who drives the position, a
/// recording that cannot join the running graph) or a seek back a few seconds reads what it read
/// already from memory, not from the network again.
///
/// It keeps the most recent objects up to ``budget`` bytes, and at least ``minimumKept`` of them
/// whatever their size (the object of the position, and the one before it whose keyframe a GOP may start
/// in, are among the last few the source fetched). Only objects fetched whole are kept; listings, URL
/// refusals and failures pass through. Keeping a `Data` costs no copy of a plaintext object: the bytes
/// are those the graph holds while it reads them, kept a little longer (an encrypted one is copied once
/// before its decryption, which is in place only in bytes nothing else holds: services of local files
/// are not wrapped, `RecordingService.readsLocalFiles`).
///
/// One per play: a play's objects are fetched with its token (D5), so a new play takes a new one. A hit
/// is handed over through `deliver` (a completion is never called inside the call that started it);
/// cancelled before that, it reports `cancelled`, exactly once. Thread-safe: any method from any thread.
package final class RecentObjects: RecordingService {
  /// The service objects are fetched from on a miss.
  package let service: any RecordingService
  /// The bytes of objects kept (at least ``minimumKept`` objects are, whatever their size).
  package let budget: Int
  /// The fewest objects kept.
  package let minimumKept: Int
  private let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void
  /// The package's pthread-backed lock: the thread sanitizer sees it (not `Synchronization.Mutex`).
  private let kept = Locked(Kept())

  /// The objects kept, oldest first.
  private struct Kept {
    var objects: [(key: Key, data: Data, verified: Bool)] = []
    var bytes = 0
  }

  /// What tells an object apart: its listing's id, span, size and digest (not its URL, which a new
  /// listing signs again).
  private struct Key: Hashable {
    let id: String
    let start: Int64
    let end: Int64
    let size: Int
    let sha256: String

    init(_ segment: RecordingIndex.Segment) {
      id = segment.id
      start = segment.startMs
      end = segment.endMs
      size = segment.size
      sha256 = segment.sha256
    }
  }

  /// Keeps what `service` fetches (at most `budget` bytes, at least `minimumKept` objects) and hands
  /// hits over through `deliver`.
  package init(
    service: any RecordingService, budget: Int = 32 << 20, minimumKept: Int = 3,
    deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) {
    self.service = service
    self.budget = budget
    self.minimumKept = minimumKept
    self.deliver = deliver
  }

  /// The service's endpoint.
  package var endpoint: String { service.endpoint }

  /// Lists through the service.
  @discardableResult
  package func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest {
    service.listSegments(in: range, token: token, completion: completion)
  }

  /// Hands over the object kept for `segment`, or fetches it from the service (and keeps it).
  @discardableResult
  package func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    let key = Key(segment)
    let hit = kept.withLock { kept in kept.objects.last { $0.key == key }.map { ($0.data, $0.verified) } }
    guard let (data, verified) = hit else {
      return service.fetchObject(segment) { [self] fetch in
        if case .fetched(let data, let verified) = fetch { keep(key, data, verified: verified) }
        completion(fetch)
      }
    }
    let cancelled = CancelFlag()
    deliver {
      guard !cancelled.isSet else {
        return completion(.failed(MediaError(.cancelled, "the fetch of object \(segment.id) was cancelled")))
      }
      completion(.fetched(data, verified: verified))
    }
    return ServiceRequest(onCancel: { cancelled.set() })
  }

  /// How many objects are kept now.
  package var count: Int { kept.withLock { $0.objects.count } }

  private func keep(_ key: Key, _ data: Data, verified: Bool) {
    kept.withLock { kept in
      if let index = kept.objects.firstIndex(where: { $0.key == key }) {
        kept.bytes -= kept.objects.remove(at: index).data.count
      }
      kept.objects.append((key, data, verified))
      kept.bytes += data.count
      while kept.objects.count > minimumKept, kept.bytes > budget {
        kept.bytes -= kept.objects.removeFirst().data.count
      }
    }
  }
}

/// Set once, read from any thread: a request cancelled before its hit was handed over.
private final class CancelFlag: Sendable {
  private let flag = Atomic(false)
  var isSet: Bool { flag.load(ordering: .acquiring) }
  func set() { flag.store(true, ordering: .releasing) }
}
