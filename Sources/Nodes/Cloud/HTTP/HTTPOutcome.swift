import Foundation

/// How an HTTP transfer ended, after its retries.
enum HTTPOutcome: Sendable {
  /// A 2xx answer with the whole body (and its SHA-256 when the request asked for it).
  case success(status: Int, body: Data, sha256: String?)
  /// A final error answer (4xx other than 429): the status and the JSON body's `error` and `message`.
  case refused(status: Int, error: String?, message: String?)
  /// The host name does not resolve: libcurl's failure.
  case unresolvedHost(LibraryFailure)
  /// No connection could be made on any attempt, and not because the host refused it (no route, network
  /// down: the local network's failure): the last one's libcurl failure. (A host that refuses is reachable:
  /// its attempts are transient failures, `exhausted` in the end.)
  case unreachable(LibraryFailure)
  /// Transient failures (timeouts, resets, 5xx, 429, short bodies) until the retry rules gave up: what
  /// happened, and the last attempt's libcurl failure when it ended in one (nil after an HTTP status).
  case exhausted(String, cause: LibraryFailure?)
  /// More bytes than the expected size arrived.
  case oversized(Int)
  /// Cancelled by the caller.
  case cancelled
}

extension HTTPOutcome {
  /// The seed's error for a transfer that ended without an answer to use (`spec/cloud-api.md`'s table):
  /// an unresolvable host, no connection, retries exhausted, an oversized answer, a cancellation. Nil
  /// for a success or a refusal, which each caller reads in its own way. `what` names the transfer
  /// ("the listing").
  func transferError(_ what: String, endpoint: String) -> MediaError? {
    switch self {
    case .unresolvedHost(let failure):
      MediaError(
        .hostUnresolved, "cannot resolve the host of \(endpoint): \(failure.text)", cause: failure)
    case .unreachable(let failure):
      MediaError(.networkUnavailable, "cannot reach \(endpoint): \(failure.text)", cause: failure)
    case .exhausted(let message, let cause):
      MediaError(.serviceUnavailable, "\(what) of \(endpoint) failed: \(message)", cause: cause)
    case .oversized(let count):
      MediaError(.serviceUnavailable, "the answer to \(what) of \(endpoint) is larger than \(count) bytes")
    case .cancelled: MediaError(.cancelled, "\(what) was cancelled")
    case .success, .refused: nil
    }
  }
}
