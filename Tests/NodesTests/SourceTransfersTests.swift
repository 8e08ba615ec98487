import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// How many objects a cloud source fetches at once.
@Suite("CloudSegmentSource transfers")
struct SourceTransfersTests {
  /// A service whose listing answers on the executor and whose fetches end when the test says so.
  final class HeldService: RecordingService, @unchecked Sendable {
    let executor: ManualExecutor
    let segments: [RecordingIndex.Segment]
    let held = Locked<[(id: String, complete: @Sendable (ObjectFetch) -> Void)]>([])
    let started = Locked<[String]>([])
    init(executor: ManualExecutor, segments: [RecordingIndex.Segment]) {
      self.executor = executor
      self.segments = segments
    }
    var endpoint: String { "test://" }
    func listSegments(
      in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
    ) -> ServiceRequest {
      let index = RecordingIndex(deviceId: "d", segments: segments.filter { range.overlaps($0.range) })
      executor.execute { completion(.success(index)) }
      return ServiceRequest(onCancel: {})
    }
    func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
      -> ServiceRequest
    {
      started.withLock { $0.append(segment.id) }
      held.withLock { $0.append((segment.id, completion)) }
      return ServiceRequest(onCancel: {}, progress: { 0 })
    }
    /// Ends the fetch held at `index` (0: the oldest).
    func complete(_ index: Int = 0) {
      let (id, complete) = held.withLock { $0.remove(at: index) }
      let size = segments.first { $0.id == id }?.size ?? 0
      complete(.fetched(Data(count: size), verified: true))
    }
  }

  @Test("at most `maximumTransfers` fetches run at once; each that ends lets the next start, in order")
  func atMostSoMany() throws {
    let executor = ManualExecutor()
    let segments = (0..<6).map { index in
      let start = Int64(1_000_000 + index * 10_000)
      return RecordingIndex.Segment(
        id: "\(start)", startMs: start, endMs: start + 10_000, url: "objects/\(start)", size: 1000, sha256: "",
        key: nil, tracks: [])
    }
    let service = HeldService(executor: executor, segments: segments)
    let source = CloudSegmentSource(
      service: service, range: MediaRange(startMilliseconds: 1_000_000, endMilliseconds: 1_060_000), token: "t",
      prefetchBytes: 1 << 20, maximumTransfers: 2, stallBudget: nil)
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let sink = CollectingSink<FetchedObject>()
    pipeline.connect(source, to: sink)
    try pipeline.start()
    executor.runUntilIdle()
    #expect(service.started.withLock { $0 } == ["1000000", "1010000"])
    // The second ends first: the third starts; the objects still leave in order.
    service.complete(1)
    executor.runUntilIdle()
    #expect(service.started.withLock { $0.count } == 3 && service.held.withLock { $0.count } == 2)
    #expect(sink.items.isEmpty)
    while !service.held.withLock({ $0.isEmpty }) {
      service.complete()
      executor.runUntilIdle()
      #expect(service.held.withLock { $0.count } <= 2)
    }
    #expect(service.started.withLock { $0 } == segments.map(\.id))
    #expect(sink.items.map(\.segment.id) == segments.map(\.id))
    #expect(sink.finishCount == 1)
    pipeline.stop()
  }
}
