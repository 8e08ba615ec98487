import Foundation
import PipelineGraph

/// Where recordings come from: the cloud API over HTTP (``CloudService``) or a local library
/// (``LocalLibraryService``). Listing queries and ``CloudSegmentSource`` work on either, so every flow
/// runs against `file://` and `http(s)://` endpoints alike.
///
/// Completions are called exactly once, on a thread of the service's choosing, never inside the call
/// that started the request. Implementations are thread-safe, with no lifecycle: any method may be
/// called from any thread.
public protocol RecordingService: AnyObject, Sendable {
  /// The endpoint, for messages.
  var endpoint: String { get }

  /// Lists the segments that intersect `range` (at most 10 days) with `token`; their `url`s are
  /// absolute (or paths of a local library).
  @discardableResult
  func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest

  /// Fetches one object of a listing.
  @discardableResult
  func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest

  /// Whether objects are read from local files, which the page cache gives again for the price of a
  /// read: a replay keeps none of them in memory to read again (kept, an encrypted object is copied whole
  /// before its decryption, which is done in place only in bytes nothing else holds). False unless the
  /// service says so.
  var readsLocalFiles: Bool { get }
}

extension RecordingService {
  /// Objects come over the network (see the requirement).
  public var readsLocalFiles: Bool { false }
}

/// What fetching an object gave.
public enum ObjectFetch: Sendable {
  /// The object's bytes (exactly the listed size); `verified` when their SHA-256 was already checked
  /// against the listing while they arrived (else the verifier checks it).
  case fetched(Data, verified: Bool)
  /// The object's URL was refused as expired or invalid (403): list again for a fresh one.
  case urlRefused(MediaError)
  /// The object could not be had: a gap reason (`notFound`, `downloadFailed`, `integrityFailed`) or, when
  /// ``MediaError/gapReason`` is nil, a failure that ends the operation (network, DNS, cancellation).
  case failed(MediaError)
}

/// A request in progress; ``cancel()`` stops it promptly (its completion then reports `cancelled`).
///
/// No states of its own: ``cancel()`` may be called from any thread, at any time, and runs the
/// `onCancel` given at creation on the calling thread each time (so `onCancel` must be idempotent).
public final class ServiceRequest: Sendable {
  private let onCancel: @Sendable () -> Void
  private let progress: (@Sendable () -> Int)?

  /// A request that `onCancel` stops and whose received bytes `progress` tells (nil: a request that
  /// does not wait on a network).
  public init(onCancel: @escaping @Sendable () -> Void, progress: (@Sendable () -> Int)? = nil) {
    self.onCancel = onCancel
    self.progress = progress
  }

  /// Bytes the request has received so far (over every attempt), or nil when it does not wait on a
  /// network (a local library); callable from any thread.
  public var bytesReceived: Int? { progress?() }

  /// Stops the request; idempotent, harmless after it finished.
  public func cancel() { onCancel() }
}

/// The directory a `file://` endpoint names: `file:///dir` (or `file://localhost/dir`). Throws
/// `invalidArgument` for one that names no directory, or a host (`file://relative/dir` is a host
/// `relative` and the path `/dir`, not a relative path: it would read `/dir`).
public func libraryDirectory(of url: URL) throws -> URL {
  guard (url.host ?? "").isEmpty || url.host?.lowercased() == "localhost" else {
    throw MediaError(
      .invalidArgument,
      "the endpoint '\(url.absoluteString)' names the host '\(url.host ?? "")': a library is file:///absolute/dir")
  }
  guard !url.path.isEmpty else {
    throw MediaError(.invalidArgument, "the endpoint '\(url.absoluteString)' names no directory")
  }
  return URL(fileURLWithPath: url.path)
}

/// The service an endpoint names: `file:///dir` a local library, `http(s)://host[:port][/prefix]` the
/// cloud API (see ``CloudService/init(endpoint:policy:verifiesWhileReceiving:)``).
public func recordingService(endpoint: String, verifiesWhileReceiving: Bool = true) throws -> any RecordingService {
  guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased() else {
    throw MediaError(.invalidArgument, "the endpoint '\(endpoint)' is not a URL")
  }
  switch scheme {
  case "file":
    return LocalLibraryService(directory: try libraryDirectory(of: url))
  case "http", "https":
    guard url.host != nil else { throw MediaError(.invalidArgument, "the endpoint '\(endpoint)' names no host") }
    if let port = url.port, !(1...65535).contains(port) {
      throw MediaError(.invalidArgument, "the endpoint '\(endpoint)' names port \(port), outside 1...65535")
    }
    return CloudService(endpoint: url, verifiesWhileReceiving: verifiesWhileReceiving)
  default:
    throw MediaError(.invalidArgument, "the endpoint must be http(s):// or file://, not '\(endpoint)'")
  }
}
