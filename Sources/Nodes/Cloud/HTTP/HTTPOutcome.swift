import Foundation

/// How an HTTP transfer ended, after its retries.
enum HTTPOutcome: Sendable {
  /// A 2xx answer with the whole body (and its SHA-256 when the request asked for it).
  case success(status: Int, body: Data, sha256: String?)
  /// A final error answer (4xx other than 429): the status and the JSON body's `error` and `message`.
  case refused(status: Int, error: String?, message: String?)
  /// The host name does not resolve.
  case unresolvedHost(String)
  /// No connection could be made (refused, no route, network down) on any attempt.
  case unreachable(String)
  /// Transient failures (timeouts, resets, 5xx, 429, short bodies) until the retry rules gave up.
  case exhausted(String)
  /// More bytes than the expected size arrived.
  case oversized(Int)
  /// Cancelled by the caller.
  case cancelled
}
