import Foundation
import PipelineGraph

/// The cloud API of `spec/cloud-api.md` over libcurl: listing with a bearer token, objects through
/// their presigned URLs with retries and `Range` resumption, and the error table's answers reported as
/// the engine's kinds (`credentialsExpired`, `accessDenied`, `serviceUnavailable` …; the SDK gives them
/// the seed's codes).
///
/// Stateless and thread-safe. Listing completions run on a Dispatch global queue; object completions on
/// the process's network thread (`tipipe.network`), or a global queue for a refusal before any transfer.
public final class CloudService: RecordingService {
  /// The endpoint, e.g. `http://127.0.0.1:8080`.
  public let endpoint: String
  private let base: URL
  private let policy: TransferPolicy
  private let transport: HTTPTransport
  private let verifiesWhileReceiving: Bool

  /// A client of the service at `endpoint` whose transfers follow `policy`. With
  /// `verifiesWhileReceiving` (the default) an object's SHA-256 is computed as its bytes arrive and
  /// checked against the listing, so the verifier does not read the object again; a fetch benchmark
  /// turns it off to do what `curl` does.
  public init(endpoint: URL, policy: TransferPolicy = TransferPolicy(), verifiesWhileReceiving: Bool = true) {
    self.verifiesWhileReceiving = verifiesWhileReceiving
    self.endpoint = endpoint.absoluteString
    // The listing URL `{endpoint}/v1/recordings`: relative object URLs resolve against it.
    base = endpoint.absoluteString.hasSuffix("/") ? endpoint : URL(string: endpoint.absoluteString + "/")!
    self.policy = policy
    transport = .shared
  }

  /// Lists `[range)` with `token`: `GET {endpoint}/v1/recordings?start_ms=…&end_ms=…`.
  @discardableResult
  public func listSegments(
    in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
  ) -> ServiceRequest {
    let listing = URL(string: "v1/recordings", relativeTo: base)!.absoluteURL
    let url = "\(listing.absoluteString)?start_ms=\(range.start.milliseconds)&end_ms=\(range.end.milliseconds)"
    let endpoint = self.endpoint
    // A token with a line break would add headers of its own.
    guard !token.contains(where: { $0.isNewline }) else {
      let refusal = MediaError(.accessDenied, "the token contains a line break")
      DispatchQueue.global().async { completion(.failure(refusal)) }
      return ServiceRequest {}
    }
    var request = HTTPExchange.Request(url: url, headers: ["Authorization: Bearer \(token)"])
    request.policy = policy
    let exchange = HTTPExchange(request) { outcome in
      // Decoding a listing takes time (10,000 entries): not on the network thread, whose other transfers
      // and cancellations must not wait for it.
      DispatchQueue.global().async { completion(Self.listing(outcome, listing: listing, endpoint: endpoint)) }
    }
    transport.submit(exchange)
    return ServiceRequest(onCancel: { [transport] in transport.cancel(exchange) }, progress: { exchange.bytesReceived })
  }

  /// Fetches an object through its presigned URL, resuming broken transfers with `Range`.
  @discardableResult
  public func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
    -> ServiceRequest
  {
    let name = segment.id.prefix(64)
    guard segment.size <= RecordingIndex.maximumObjectSize else {
      let failure = MediaError.gap(.mediaUnreadable, "the listing gives \(name) an implausible size of \(segment.size)")
      DispatchQueue.global().async { completion(.failed(failure)) }
      return ServiceRequest {}
    }
    var request = HTTPExchange.Request(url: segment.url, expectedSize: segment.size, resumable: true)
    request.policy = policy
    request.hashesBody = verifiesWhileReceiving
    let expected = segment.sha256.lowercased()
    let exchange = HTTPExchange(request) { outcome in
      completion(Self.object(outcome, name: String(name), sha256: expected))
    }
    transport.submit(exchange)
    return ServiceRequest(onCancel: { [transport] in transport.cancel(exchange) }, progress: { exchange.bytesReceived })
  }

  // MARK: The error table

  static func listing(_ outcome: HTTPOutcome, listing: URL, endpoint: String) -> Result<RecordingIndex, MediaError> {
    switch outcome {
    case .success(_, let body, _):
      do {
        var index = try RecordingIndex.decode(body, source: "the listing of \(endpoint)")
        for position in index.segments.indices {
          let reference = index.segments[position].url
          guard let absolute = URL(string: reference, relativeTo: listing)?.absoluteURL,
            ["http", "https"].contains(absolute.scheme?.lowercased() ?? "")
          else {
            return .failure(
              MediaError(
                .serviceUnavailable, "the listing of \(endpoint) gives a bad object URL '\(reference.prefix(80))'")
            )
          }
          index.segments[position].url = absolute.absoluteString
        }
        return .success(index)
      } catch {
        return .failure(MediaError(error))
      }
    case .refused(let status, let error, let message):
      let detail = message.map { ": \($0)" } ?? ""
      switch (status, error) {
      case (400, _): return .failure(MediaError(.invalidArgument, "the service refused the query\(detail)"))
      case (401, "token_expired"):
        // The reference server says just that: not twice.
        let said = message == "the token has expired" ? "" : detail
        return .failure(MediaError(.credentialsExpired, "the token has expired\(said)"))
      case (401, _), (403, _):
        return .failure(MediaError(.accessDenied, "the token is invalid or has no access to the device\(detail)"))
      default:
        return .failure(MediaError(.serviceUnavailable, "the listing answered HTTP \(status)\(detail)"))
      }
    case .unresolvedHost, .unreachable, .exhausted, .oversized, .cancelled:
      return .failure(outcome.transferError("the listing", endpoint: endpoint)!)
    }
  }

  static func object(_ outcome: HTTPOutcome, name: String, sha256 expected: String) -> ObjectFetch {
    switch outcome {
    case .success(_, let body, nil): return .fetched(body, verified: false)
    case .success(_, let body, let digest?):
      guard digest == expected else {
        return .failed(MediaError.gap(.integrityFailed, "\(name) does not match its SHA-256"))
      }
      return .fetched(body, verified: true)
    case .refused(404, _, _): return .failed(MediaError.gap(.notFound, "\(name) does not exist (HTTP 404)"))
    case .refused(403, let error, _):
      return .urlRefused(MediaError.gap(.downloadFailed, "the URL of \(name) was refused (\(error ?? "HTTP 403"))"))
    case .refused(let status, let error, _):
      return .failed(MediaError.gap(.downloadFailed, "\(name): HTTP \(status) (\(error ?? "no error code"))"))
    case .unresolvedHost(let failure):
      return .failed(
        MediaError(
          .hostUnresolved, "cannot resolve the host of \(name)'s URL: \(failure.text)", cause: failure))
    case .unreachable(let failure):
      return .failed(
        MediaError(.networkUnavailable, "cannot reach the host of \(name): \(failure.text)", cause: failure))
    case .exhausted(let message, let cause):
      return .failed(MediaError.gap(.downloadFailed, "\(name): \(message)", cause: cause))
    case .oversized(let count):
      return .failed(MediaError.gap(.integrityFailed, "\(name) is longer than listed (\(count) bytes and more)"))
    case .cancelled: return .failed(MediaError(.cancelled, "the download of \(name) was cancelled"))
    }
  }
}
