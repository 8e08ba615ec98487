internal import CCurl
import Foundation
import PipelineGraph
import Synchronization

/// The network thread: one libcurl multi handle that runs every HTTP exchange of the process, with
/// keep-alive connections (and HTTP/2 multiplexing where the server offers it), retries after their
/// backoff, and cancellation that takes effect at once.
///
/// Exchanges are submitted from any thread; their completions are called on the network thread and
/// must only hand the outcome on (`NodeContext/makeCompletion(_:)` does).
final class HTTPTransport: @unchecked Sendable {
  /// The transport of the process.
  static let shared = HTTPTransport()

  private let multi: UnsafeMutableRawPointer
  private let incoming = Locked<[HTTPExchange]>([])
  // Network-thread state.
  private var inFlight: [UnsafeMutableRawPointer: HTTPExchange] = [:]
  private var waiting: [HTTPExchange] = []

  private init() {
    _ = CurlGlobal.initialized
    guard let multi = curl_multi_init() else { fatalError("libcurl cannot create a multi handle") }
    self.multi = multi
    // Keep-alive connections to a few hosts; at most 8 parallel connections per host.
    _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8)
    _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64)
    let thread = Thread { [unowned self] in run() }
    thread.name = "tipipe.network"
    thread.start()
  }

  /// Starts `exchange` (on the network thread, at once).
  func submit(_ exchange: HTTPExchange) {
    incoming.withLock { $0.append(exchange) }
    curl_multi_wakeup(multi)
  }

  /// Cancels `exchange`: its transfer stops and its completion reports `cancelled` within one turn of
  /// the network thread.
  func cancel(_ exchange: HTTPExchange) {
    exchange.cancel()
    curl_multi_wakeup(multi)
  }

  private func run() {
    while true {
      let now = ContinuousClock.now
      for exchange in incoming.withLock({ queue in
        defer { queue.removeAll() }; return queue
      }) {
        exchange.begin(now: now)
        start(exchange, now: now)
      }
      for (handle, exchange) in inFlight where exchange.isCancelled {
        curl_multi_remove_handle(multi, handle)
        inFlight[handle] = nil
        exchange.finish(.cancelled)
      }
      var due: [HTTPExchange] = []
      waiting.removeAll { exchange in
        if exchange.isCancelled {
          exchange.finish(.cancelled)
          return true
        }
        guard exchange.notBefore <= now else { return false }
        due.append(exchange)
        return true
      }
      for exchange in due { start(exchange, now: now) }

      var running: Int32 = 0
      curl_multi_perform(multi, &running)
      var remaining: Int32 = 0
      while let message = curl_multi_info_read(multi, &remaining) {
        guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
          let exchange = inFlight.removeValue(forKey: handle)
        else { continue }
        let result = message.pointee.data.result
        curl_multi_remove_handle(multi, handle)
        if let outcome = exchange.attemptEnded(result, now: .now) {
          exchange.finish(outcome)
        } else {
          waiting.append(exchange)
        }
      }

      var timeout = 1000
      if let next = waiting.map(\.notBefore).min() {
        let (seconds, attoseconds) = (next - ContinuousClock.now).components
        timeout = max(0, min(timeout, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000) + 1))
      }
      curl_multi_poll(multi, nil, 0, Int32(timeout), nil)
    }
  }

  private func start(_ exchange: HTTPExchange, now: ContinuousClock.Instant) {
    if exchange.isCancelled {
      exchange.finish(.cancelled)
      return
    }
    guard let handle = exchange.makeAttempt(now: now) else {
      exchange.finish(.exhausted("libcurl cannot create a transfer", cause: nil))
      return
    }
    inFlight[handle] = exchange
    curl_multi_add_handle(multi, handle)
  }
}

/// libcurl's global initialization, done once before the first handle.
enum CurlGlobal {
  static let initialized: Bool = {
    // OpenSSL first, without its exit-time cleanup (curl would initialize it with one).
    _ = CryptoLibrary.initialized
    return curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
  }()
}
