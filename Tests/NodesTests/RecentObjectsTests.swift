import Foundation
import Nodes
import PipelineGraph
import Synchronization
import Testing

/// The objects a play fetched last, handed out again instead of fetched again.
@Suite("RecentObjects")
struct RecentObjectsTests {
  /// A service that answers each fetch on the executor, with `size` bytes or a failure, and counts them.
  final class Service: RecordingService, @unchecked Sendable {
    let executor: ManualExecutor
    let fetches = Mutex<[String]>([])
    let failing: Set<String>
    init(executor: ManualExecutor, failing: Set<String> = []) {
      self.executor = executor
      self.failing = failing
    }
    var endpoint: String { "test://" }
    func listSegments(
      in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
    ) -> ServiceRequest {
      executor.execute { completion(.success(RecordingIndex(deviceId: "d", segments: []))) }
      return ServiceRequest(onCancel: {})
    }
    func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
      -> ServiceRequest
    {
      fetches.withLock { $0.append(segment.id) }
      let failed = failing.contains(segment.id)
      executor.execute {
        if failed {
          completion(.failed(MediaError(.downloadFailed, "no", gapReason: .downloadFailed)))
        } else {
          completion(.fetched(Data(repeating: UInt8(segment.startMs % 256), count: segment.size), verified: true))
        }
      }
      return ServiceRequest(onCancel: {})
    }
  }

  func segment(_ id: String, size: Int = 60) -> RecordingIndex.Segment {
    let start = Int64(id.unicodeScalars.first!.value)
    return RecordingIndex.Segment(
      id: id, startMs: start, endMs: start + 1, url: "objects/\(id)", size: size, sha256: "digest-\(id)", key: nil,
      tracks: [])
  }

  /// Fetches `segment` and returns what came back once the executor ran.
  func fetch(_ objects: RecentObjects, _ segment: RecordingIndex.Segment, _ executor: ManualExecutor) -> ObjectFetch? {
    let answer = Mutex<[ObjectFetch]>([])
    objects.fetchObject(segment) { fetch in answer.withLock { $0.append(fetch) } }
    // Never inside the call.
    #expect(answer.withLock { $0.isEmpty })
    executor.runUntilIdle()
    let answers = answer.withLock { $0 }
    #expect(answers.count == 1)
    return answers.first
  }

  @Test("an object fetched once is handed out again, as it came, without asking the service")
  func aHit() throws {
    let executor = ManualExecutor()
    let service = Service(executor: executor)
    let objects = RecentObjects(service: service) { executor.execute($0) }
    guard case .fetched(let first, let verified)? = fetch(objects, segment("a"), executor) else {
      Issue.record("no object")
      return
    }
    guard case .fetched(let again, let verifiedAgain)? = fetch(objects, segment("a"), executor) else {
      Issue.record("no object")
      return
    }
    #expect(again == first && verified && verifiedAgain)
    #expect(service.fetches.withLock { $0 } == ["a"])
  }

  @Test("the most recent objects are kept up to the budget, and at least the minimum whatever their size")
  func theBudget() throws {
    let executor = ManualExecutor()
    let service = Service(executor: executor)
    let objects = RecentObjects(service: service, budget: 100, minimumKept: 2) { executor.execute($0) }
    for id in ["a", "b", "c"] { _ = fetch(objects, segment(id), executor) }
    // 60 bytes each: two kept (120 bytes, over the budget but the minimum), the oldest let go.
    #expect(objects.count == 2)
    _ = fetch(objects, segment("c"), executor)
    _ = fetch(objects, segment("b"), executor)
    _ = fetch(objects, segment("a"), executor)
    #expect(service.fetches.withLock { $0 } == ["a", "b", "c", "a"])
    // Small objects: as many as fit.
    let small = RecentObjects(service: service, budget: 100, minimumKept: 1) { executor.execute($0) }
    for id in ["d", "e", "f", "g", "h"] { _ = fetch(small, segment(id, size: 30), executor) }
    #expect(small.count == 3)
  }

  @Test("failures are not kept, and a hit cancelled before it is handed over reports cancelled, once")
  func failuresAndCancels() throws {
    let executor = ManualExecutor()
    let service = Service(executor: executor, failing: ["x"])
    let objects = RecentObjects(service: service) { executor.execute($0) }
    guard case .failed(let error)? = fetch(objects, segment("x"), executor) else {
      Issue.record("not a failure")
      return
    }
    #expect(error.gapReason == .downloadFailed)
    _ = fetch(objects, segment("x"), executor)
    #expect(service.fetches.withLock { $0 } == ["x", "x"])
    _ = fetch(objects, segment("a"), executor)
    let answers = Mutex<[ObjectFetch]>([])
    let request = objects.fetchObject(segment("a")) { fetch in answers.withLock { $0.append(fetch) } }
    request.cancel()
    request.cancel()
    executor.runUntilIdle()
    let received = answers.withLock { $0 }
    #expect(received.count == 1)
    guard case .failed(let cancelled)? = received.first else {
      Issue.record("not cancelled")
      return
    }
    #expect(cancelled.kind == .cancelled)
  }
}
