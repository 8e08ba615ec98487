import Foundation
import PipelineGraph
import Synchronization

/// A `file://` library as a ``RecordingService``: the same listing rules and errors as the cloud API
/// where they apply (a missing object is `notFound`), any non-empty token accepted.
///
/// Reads run on `workers` (a `ManualExecutor` makes them deterministic in tests), and so do the
/// completions. Thread-safe; its one state is the index, read at the first listing and kept (later
/// changes to `index.json` are not seen).
public final class LocalLibraryService: RecordingService {
  /// `file://` and the directory.
  public let endpoint: String
  private let directory: URL
  private let workers: any WorkerExecutor
  private let index = Locked<RecordingIndex?>(nil)

  /// The library in `directory`; reads on `workers`.
  public init(directory: URL, workers: any WorkerExecutor = WorkerPool.shared) {
    self.directory = directory
    self.workers = workers
    endpoint = directory.absoluteURL.absoluteString
  }

  /// Lists the library's segments that intersect `range`, their urls made absolute `file:` URLs.
  @discardableResult
  public func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest {
    let cancelled = Atomic<Bool>(false)
    workers.execute { [self] in
      guard !cancelled.load(ordering: .acquiring) else {
        return completion(.failure(MediaError(.cancelled, "the listing was cancelled")))
      }
      completion(Result { try list(range, token: token) }.mapError { MediaError($0) })
    }
    return ServiceRequest { cancelled.store(true, ordering: .releasing) }
  }

  private func list(_ range: MediaRange, token: String) throws -> RecordingIndex {
    guard !token.isEmpty else { throw MediaError(.accessDenied, "a token is required") }
    guard range.end > range.start, range.end.milliseconds - range.start.milliseconds <= 864_000_000 else {
      throw MediaError(.invalidArgument, "a listing needs start < end and a span of at most 10 days")
    }
    let whole = try loadedIndex()
    var segments: [RecordingIndex.Segment] = []
    for var segment in whole.segments where segment.range.overlaps(range) {
      segment.url = segment.fileURL(in: directory).absoluteString
      segments.append(segment)
    }
    return RecordingIndex(deviceId: whole.deviceId, segments: segments)
  }

  private func loadedIndex() throws -> RecordingIndex {
    if let loaded = index.withLock({ $0 }) { return loaded }
    var loaded = try RecordingIndex.load(library: directory)
    loaded.segments.sort { $0.startMs < $1.startMs }
    index.withLock { $0 = loaded }
    return loaded
  }

  /// True: objects are files of the library.
  public var readsLocalFiles: Bool { true }

  /// Reads one object of a listing.
  @discardableResult
  public func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    let cancelled = Atomic<Bool>(false)
    let url = segment.fileURL(in: directory)
    workers.execute {
      guard !cancelled.load(ordering: .acquiring) else {
        return completion(.failed(MediaError(.cancelled, "the read of \(segment.id.prefix(64)) was cancelled")))
      }
      switch Self.read(url, segment: segment) {
      case .success(let data): completion(.fetched(data, verified: false))
      case .failure(let error): completion(.failed(error))
      }
    }
    return ServiceRequest { cancelled.store(true, ordering: .releasing) }
  }

  /// Reads the object of `segment` at `url` into a pooled buffer; a missing object is `notFound`, one of
  /// another size `integrityFailed`, an unreadable one `downloadFailed`.
  static func read(_ url: URL, segment: RecordingIndex.Segment) -> Result<Data, MediaError> {
    let name = url.lastPathComponent
    guard segment.size <= RecordingIndex.maximumObjectSize else {
      return .failure(
        MediaError.gap(.mediaUnreadable, "the index gives \(name) an implausible size of \(segment.size)"))
    }
    do {
      return .success(try BufferPool.shared.read(path: url.path, expectedSize: segment.size))
    } catch .missing {
      return .failure(MediaError.gap(.notFound, "\(name) does not exist"))
    } catch .sizeMismatch(let actual, let expected) {
      return .failure(MediaError.gap(.integrityFailed, "\(name) has \(actual) bytes, the index says \(expected)"))
    } catch {
      return .failure(MediaError.gap(.downloadFailed, "cannot read \(name): it \(error)"))
    }
  }
}
