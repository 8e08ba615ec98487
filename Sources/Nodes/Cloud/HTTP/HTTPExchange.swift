internal import CCurl
import Foundation
import Synchronization

/// One HTTP GET (or a POST of a file) as the ``HTTPTransport`` runs it: its attempts, resumption and the retry rules of
/// ``TransferPolicy``. Everything but ``cancel()`` happens on the network thread.
final class HTTPExchange: @unchecked Sendable {
  struct Request: Sendable {
    var url: String
    var headers: [String] = []
    /// The exact body size when known (an object): more is `oversized`, less is a short body.
    var expectedSize: Int?
    /// A broken transfer continues with `Range: bytes=N-` rather than from byte 0.
    var resumable = false
    /// The body's SHA-256 is computed as the bytes arrive (while they are in the cache), so that the
    /// verifier need not read the object again.
    var hashesBody = false
    /// POSTs this file's bytes (sent again from its start by every attempt).
    var upload: URL?
    var policy = TransferPolicy()
  }

  let request: Request
  private let completion: @Sendable (HTTPOutcome) -> Void
  private let cancelRequested = Atomic<Bool>(false)
  /// Body bytes received over every attempt (readable from any thread: an operation's stall watch).
  private let bytesArrived = Atomic<Int>(0)

  // Network-thread state.
  private var body: BufferPool.FillingBuffer?
  private var digest: SHA256Stream?
  private var growingBody = Data()
  private var errorBody = Data()
  private var attemptStartCount = 0
  private var fruitlessAttempts = 0
  private var lastFailure = ""
  private var everConnected = false
  private var overflowed = false
  private var finished = false
  private(set) var deadline: ContinuousClock.Instant = .now
  private(set) var notBefore: ContinuousClock.Instant = .now
  private(set) var easy: UnsafeMutableRawPointer?
  private var headerList: UnsafeMutablePointer<curl_slist>?
  /// The upload's file, open for the current attempt.
  private var uploadDescriptor: Int32 = -1

  /// The largest body kept when no size is expected (a listing).
  static let maximumUnsizedBody = 256 << 20

  init(_ request: Request, completion: @escaping @Sendable (HTTPOutcome) -> Void) {
    self.request = request
    self.completion = completion
  }

  /// Asks the transport to stop the exchange; the completion then reports `cancelled` (unless it
  /// already reported something else).
  func cancel() { cancelRequested.store(true, ordering: .releasing) }

  var isCancelled: Bool { cancelRequested.load(ordering: .acquiring) }

  /// Body bytes received so far, over every attempt; callable from any thread.
  var bytesReceived: Int { bytesArrived.load(ordering: .relaxed) }

  private var received: Int { body?.count ?? growingBody.count }
  /// The most body bytes held at the end of an attempt: an attempt made progress only when it went past
  /// them (a server that ignores `Range` sends the body from its start again: bytes, but none new).
  private var mostReceived = 0

  // MARK: Attempts (network thread)

  func begin(now: ContinuousClock.Instant) {
    deadline = now + request.policy.deadline
    if let size = request.expectedSize { body = BufferPool.shared.filling(capacity: size) }
    if request.hashesBody { digest = SHA256Stream() }
  }

  /// A new easy handle for the next attempt, resuming after the bytes already received.
  func makeAttempt(now: ContinuousClock.Instant) -> UnsafeMutableRawPointer? {
    guard let handle = curl_easy_init() else { return nil }
    easy = handle
    if !request.resumable { resetBody() }
    attemptStartCount = received
    errorBody.removeAll(keepingCapacity: true)
    let policy = request.policy
    _ = ccurl_setopt_string(handle, CURLOPT_URL, request.url)
    _ = ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
    _ = ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
    _ = ccurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
    // Wait for a connection that can multiplex (HTTP/2) rather than open a second one.
    _ = ccurl_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
    _ = ccurl_setopt_string(handle, CURLOPT_USERAGENT, "tipipe/0.1")
    // Objects are megabytes: larger reads mean fewer system calls and write callbacks (16 KB by default).
    _ = ccurl_setopt_long(handle, CURLOPT_BUFFERSIZE, 512 * 1024)
    _ = ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(policy.connectTimeout))
    _ = ccurl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
    _ = ccurl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Self.milliseconds(policy.stallTimeout) / 1000))
    _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, Self.milliseconds(deadline - now)))
    if received > 0 { _ = ccurl_setopt_string(handle, CURLOPT_RANGE, "\(received)-") }
    var list: UnsafeMutablePointer<curl_slist>?
    for header in request.headers { list = curl_slist_append(list, header) }
    headerList = list
    if let list { _ = ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list) }
    _ = ccurl_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
      guard let data, let context else { return 0 }
      let exchange = Unmanaged<HTTPExchange>.fromOpaque(context).takeUnretainedValue()
      return exchange.write(UnsafeRawBufferPointer(start: data, count: size * count))
    }
    _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque())
    if let upload = request.upload { prepareUpload(upload, on: handle) }
    return handle
  }

  /// POSTs the file's bytes from its start; a file that cannot be read aborts the attempt.
  private func prepareUpload(_ file: URL, on handle: UnsafeMutableRawPointer) {
    uploadDescriptor = open(file.path, O_RDONLY | O_CLOEXEC)
    var status = stat()
    let size = uploadDescriptor >= 0 && fstat(uploadDescriptor, &status) == 0 ? Int64(status.st_size) : 0
    _ = ccurl_setopt_long(handle, CURLOPT_POST, 1)
    _ = ccurl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(size))
    _ = ccurl_setopt_read_callback(handle, CURLOPT_READFUNCTION) { buffer, size, count, context in
      guard let buffer, let context else { return ccurl_readfunc_abort }
      let exchange = Unmanaged<HTTPExchange>.fromOpaque(context).takeUnretainedValue()
      guard exchange.uploadDescriptor >= 0, !exchange.isCancelled else { return ccurl_readfunc_abort }
      let got = read(exchange.uploadDescriptor, buffer, size * count)
      return got >= 0 ? got : ccurl_readfunc_abort
    }
    _ = ccurl_setopt_pointer(handle, CURLOPT_READDATA, Unmanaged.passUnretained(self).toOpaque())
  }

  private func write(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard !isCancelled, let easy else { return 0 }
    var status = 0
    _ = ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
    guard (200..<300).contains(status) else {
      if errorBody.count < 64 * 1024 { errorBody.append(bytes.bindMemory(to: UInt8.self)) }
      return bytes.count
    }
    // A server that ignores `Range` sends the whole body again.
    if status == 200 && attemptStartCount > 0 && received == attemptStartCount {
      resetBody()
      attemptStartCount = 0
    }
    if let expected = request.expectedSize, received + bytes.count > expected {
      overflowed = true
      return 0
    }
    bytesArrived.add(bytes.count, ordering: .relaxed)
    if let body {
      guard body.append(bytes) else {
        overflowed = true
        return 0
      }
      digest?.update(bytes)
    } else {
      guard growingBody.count + bytes.count <= Self.maximumUnsizedBody else {
        overflowed = true
        return 0
      }
      growingBody.append(bytes.bindMemory(to: UInt8.self))
      digest?.update(bytes)
    }
    return bytes.count
  }

  private func resetBody() {
    body?.reset()
    growingBody.removeAll(keepingCapacity: true)
    digest?.reset()
  }

  /// Ends the current attempt: the outcome when the exchange is over, nil when it retries (at
  /// ``notBefore``).
  func attemptEnded(_ code: CURLcode, now: ContinuousClock.Instant) -> HTTPOutcome? {
    var status = 0
    // The system's reason for a failed connection: refused (the host answered: a service down) or no route
    // (the network is down).
    var systemError = 0
    if let easy {
      _ = ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
      _ = ccurl_getinfo_long(easy, CURLINFO_OS_ERRNO, &systemError)
    }
    releaseHandle()
    if isCancelled { return .cancelled }
    if status > 0 { everConnected = true }
    if overflowed { return .oversized(received) }
    let transient: String
    var cause: LibraryFailure?
    if code == CURLE_OK {
      if (200..<300).contains(status) {
        if let expected = request.expectedSize, received < expected {
          transient = "short body: \(received) of \(expected) bytes"
        } else {
          return .success(status: status, body: takeBody(), sha256: digest?.finalHex())
        }
      } else if status == 429 || status >= 500 {
        transient = "HTTP \(status)"
      } else {
        let json = (try? JSONSerialization.jsonObject(with: errorBody)) as? [String: Any]
        return .refused(status: status, error: json?["error"] as? String, message: json?["message"] as? String)
      }
    } else if code == CURLE_COULDNT_RESOLVE_HOST {
      return .unresolvedHost(Self.failure(code))
    } else {
      let failure = Self.failure(code)
      cause = failure
      transient = failure.text
    }
    lastFailure = transient
    let progressed = request.resumable && received > mostReceived
    mostReceived = max(mostReceived, received)
    fruitlessAttempts = progressed ? 0 : fruitlessAttempts + 1
    let wait =
      progressed
      ? Duration.zero
      : min(request.policy.maximumBackoff, request.policy.backoff * (1 << min(fruitlessAttempts - 1, 20)))
    if fruitlessAttempts >= request.policy.attemptsWithoutProgress || now + wait >= deadline {
      // No connection ever, and not because the host refused it (a host that refuses is reachable: its
      // service is down, which is the cloud's failure after the retries, cloud-api.md): the network's.
      if !everConnected && code == CURLE_COULDNT_CONNECT && systemError != Int(ECONNREFUSED), let cause {
        return .unreachable(cause)
      }
      let reason =
        fruitlessAttempts >= request.policy.attemptsWithoutProgress ? "attempts without progress" : "deadline"
      return .exhausted("\(transient) (gave up: \(reason), \(received) bytes received)", cause: cause)
    }
    notBefore = now + wait
    return nil
  }

  /// Delivers the outcome, once.
  func finish(_ outcome: HTTPOutcome) {
    guard !finished else { return }
    finished = true
    releaseHandle()
    body = nil
    completion(outcome)
  }

  private func takeBody() -> Data {
    if let body {
      self.body = nil
      return body.data()
    }
    defer { growingBody = Data() }
    return growingBody
  }

  private func releaseHandle() {
    if let easy { curl_easy_cleanup(easy) }
    easy = nil
    if let headerList { curl_slist_free_all(headerList) }
    headerList = nil
    if uploadDescriptor >= 0 { close(uploadDescriptor) }
    uploadDescriptor = -1
  }

  deinit { releaseHandle() }

  private static func failure(_ code: CURLcode) -> LibraryFailure {
    let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
    return LibraryFailure(library: "libcurl", status: Int32(code.rawValue), text: text)
  }

  private static func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(clamping: seconds) &* 1000 &+ Int(attoseconds / 1_000_000_000_000_000)
  }
}
