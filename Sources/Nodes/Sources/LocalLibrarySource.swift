import Foundation
import PipelineGraph

/// Reads the objects of a `file://` library (`index.json` beside `objects/`) for a time range, in
/// order, with reads running ahead on the pipeline's workers up to a byte budget.
///
/// Emits one ``FetchedObject`` per index segment that intersects the range, starting with the segment
/// before the range when it abuts the first one (the keyframe at or before the range start may lie
/// there), and a `gap` event with reason `noRecording` for every stretch of the range no segment covers.
/// A missing object is a `notFound` failure, an unreadable one `downloadFailed`.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; the reads run on the pipeline's
/// workers and their results come back to that executor. A flush starts again from the range's start
/// (or a seek's target).
public final class LocalLibrarySource: SourceNode {
  /// Emits fetched objects.
  public typealias Output = FetchedObject

  /// The node's name.
  public let name = "LocalLibrarySource"
  private let directory: URL
  private let range: MediaRange
  private let prefetchBytes: Int
  private var index: RecordingIndex?
  private var plan: [Step] = []
  private var nextToRequest = 0
  private var nextToEmit = 0
  private var arrived: [Int: FetchedObject] = [:]
  private var bytesInFlight = 0

  /// One step of a read plan: an object, or a stretch no object covers.
  enum Step {
    case object(RecordingIndex.Segment)
    case hole(MediaRange)
  }

  /// Reads `[range.start, range.end)` from the library at `directory`, keeping at most `prefetchBytes`
  /// of objects read ahead of what downstream has taken.
  public init(directory: URL, range: MediaRange, prefetchBytes: Int = 32 << 20) {
    self.directory = directory
    self.range = range
    self.prefetchBytes = prefetchBytes
  }

  /// Loads the index and plans the reads.
  public func start(context: NodeContext<FetchedObject>) throws {
    let index = try RecordingIndex.load(library: directory)
    self.index = index
    plan = Self.plan(index: index, range: range)
  }

  static func plan(index: RecordingIndex, range: MediaRange) -> [Step] {
    guard !range.isEmpty else { return [] }
    var steps: [Step] = []
    let segments = index.segments.sorted { $0.startMs < $1.startMs }
    guard let first = segments.firstIndex(where: { $0.range.overlaps(range) }) else {
      return [.hole(range)]
    }
    if first > 0, segments[first - 1].endMs == segments[first].startMs {
      steps.append(.object(segments[first - 1]))
    }
    var covered = range.start
    for segment in segments[first...] where segment.range.overlaps(range) {
      if segment.range.start > covered { steps.append(.hole(MediaRange(start: covered, end: segment.range.start))) }
      steps.append(.object(segment))
      covered = max(covered, segment.range.end)
    }
    if covered < range.end { steps.append(.hole(MediaRange(start: covered, end: range.end))) }
    return steps
  }

  /// Emits the next step in order, requesting reads ahead within the byte budget.
  public func produce(context: NodeContext<FetchedObject>) throws -> ProduceResult {
    requestAhead(context: context)
    guard nextToEmit < plan.count else { return .finished }
    switch plan[nextToEmit] {
    case .hole(let hole):
      context.send(.gap(RecordingGap(range: hole, tracks: [], reasons: [.noRecording])))
    case .object:
      guard let object = arrived.removeValue(forKey: nextToEmit) else { return .waiting }
      bytesInFlight -= object.segment.prefetchSize
      context.emit(object)
    }
    nextToEmit += 1
    return .produced
  }

  private func requestAhead(context: NodeContext<FetchedObject>) {
    while nextToRequest < plan.count {
      guard case .object(let segment) = plan[nextToRequest] else {
        nextToRequest += 1
        continue
      }
      // Always allow one read, so an object larger than the budget still gets through.
      let size = segment.prefetchSize
      guard bytesInFlight == 0 || bytesInFlight + size <= prefetchBytes else { return }
      bytesInFlight += size
      let position = nextToRequest
      nextToRequest += 1
      let url = segment.fileURL(in: directory)
      context.runOnWorker {
        FetchedObject(segment: segment, result: LocalLibraryService.read(url, segment: segment))
      } then: { [unowned self] object in
        arrived[position] = object
      }
    }
  }

  /// Restarts from the beginning of the range, or from a seek's target (`NodeContext/seekTarget`) to
  /// the range's end.
  public func flush(context: NodeContext<FetchedObject>) {
    if let index { plan = Self.plan(index: index, range: context.seekTarget.map { range.starting(at: $0) } ?? range) }
    nextToRequest = 0
    nextToEmit = 0
    arrived.removeAll()
    bytesInFlight = 0
  }
}
