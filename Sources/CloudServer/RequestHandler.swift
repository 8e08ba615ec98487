internal import CMicroHTTPD
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// Answers the requests of `spec/cloud-api.md` on libmicrohttpd's threads: everything it touches is
/// immutable or behind a mutex.
final class RequestHandler: Sendable {
  let configuration: ServerConfiguration
  let index: RecordingIndex
  /// Each object's file under `objects/` (or its URL on a listed object host), or why its index entry
  /// names nothing the server may serve.
  private let files: [String: Result<Location, Refusal>]
  /// `objects/` of the root, symlinks resolved: every file served is inside it.
  private let objectsFolder: String?

  struct Refusal: Error {
    let reason: String
  }

  /// Where an index entry's object is.
  enum Location {
    /// A file of the library, served with presigned URLs.
    case file(URL)
    /// An absolute URL on a host the operator listed, listed as it is.
    case remote(String)
  }
  private let objectRequests = Locked<[String: Int]>([:])
  private let listingRequests = Locked(0)
  private let random: Locked<SplitMix>
  /// Each device's uploads since the server started: stored count and bytes, and when the recent ones
  /// started (Unix seconds).
  private let uploadAccounts = Locked<[String: UploadAccount]>([:])
  /// Archives are inspected here, one at a time, with their connections suspended: inflating a bomb up
  /// to its cap takes a core for up to a second, which must not hold the other connections of the pool
  /// thread that received it (a listing waited 480 ms behind 20 bombs), nor more than one core.
  private let inspections = DispatchQueue(label: "tipipe.serve.upload-inspection")
  /// Uploads whose connection was suspended for an inspection, until their request completes (the
  /// answer sent, or the connection gone): the daemon must not stop with a connection suspended, nor
  /// drop an answer that says an upload was stored.
  private let suspended = DispatchGroup()
  private let stopping = Atomic<Bool>(false)
  /// The scrub previews made lately (a sheet's index and its sprite are asked for one after the other):
  /// four kept, one made at a time (429 meanwhile).
  let previews = RecentlyMade<PreviewQuery, PreviewSheet>(
    capacity: 4, makers: 1,
    busy: NotServed(answer: .error(429, "rate_limited", "previews are made one at a time; retry")))
  /// The stream segments made lately (a segment's initialization and media are asked for apart): eight
  /// kept, 64 MB of them at most (an object may be large), two made at a time (503 meanwhile).
  let segments = RecentlyMade<SegmentKey, StreamSegment>(
    capacity: 8, makers: 2, byteLimit: 64 << 20, bytes: { $0.media.count + $0.initialization.count },
    busy: NotServed(answer: .error(503, "unavailable", "segments are being made; retry")))
  /// The library as the preview and stream graphs read it (its index parsed once).
  let library: LocalLibraryService

  struct UploadAccount {
    var count = 0
    var bytes: Int64 = 0
    var recentStarts: [Int64] = []
  }

  init(_ configuration: ServerConfiguration) throws {
    self.configuration = configuration
    let loaded = try RecordingIndex.load(library: configuration.root)
    index = RecordingIndex(deviceId: loaded.deviceId, segments: loaded.segments.sorted { $0.startMs < $1.startMs })
    var files: [String: Result<Location, Refusal>] = [:]
    for segment in index.segments { files[segment.id] = Self.location(of: segment, configuration) }
    self.files = files
    objectsFolder = Self.realPath(configuration.root.appendingPathComponent("objects").path)
    library = LocalLibraryService(directory: configuration.root)
    random = Locked(SplitMix(state: configuration.faults.seed))
  }

  func objectRequestCounts() -> [String: Int] { objectRequests.withLock { $0 } }

  /// What an index entry names: a relative name under `objects/` without `..`, or an absolute
  /// `http(s)` URL on one of the operator's ``ServerConfiguration/objectHosts``; an absolute path, another
  /// URL or an escape from the folder is refused (the operator writes the library; a bad entry is theirs
  /// to fix, and it is never served).
  private static func location(
    of segment: RecordingIndex.Segment, _ configuration: ServerConfiguration
  ) -> Result<Location, Refusal> {
    let name = segment.url
    if name.contains("://") {
      guard let components = URLComponents(string: name),
        let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
        let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil
      else { return .failure(Refusal(reason: "its url is neither an http(s) URL nor a relative name under objects/")) }
      let hosts = Set(configuration.objectHosts.map { $0.lowercased() })
      let authority = components.port.map { "\(host):\($0)" } ?? host
      guard hosts.contains(authority) else {
        return .failure(Refusal(reason: "its url's host \(authority) is not one of the object hosts (--object-host)"))
      }
      return .success(.remote(name))
    }
    guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("\\"),
      !name.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0 == "." }),
      name.hasPrefix("objects/")
    else { return .failure(Refusal(reason: "its url is not a relative name under objects/")) }
    return .success(.file(configuration.root.appendingPathComponent(name)))
  }

  /// `path` with every symlink resolved, or nil when it does not exist.
  private static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  // MARK: Requests

  /// A request's headers arrived: its per-request state (a log upload's inbox, or a marker). An upload
  /// is checked here, before its body: a valid token of the served device, within its device's limits.
  func begin(_ connection: OpaquePointer, path: String, method: String) -> UnsafeMutableRawPointer {
    guard method == "POST", path == "/v1/logs" else { return Self.plainRequest }
    return Unmanaged.passRetained(admitUpload(connection)).toOpaque()
  }

  /// True when the request was refused at its headers and is answered at once (its body never read).
  func answersAtOnce(_ request: UnsafeMutableRawPointer) -> Bool {
    guard request != Self.plainRequest else { return false }
    return Unmanaged<LogInbox>.fromOpaque(request).takeUnretainedValue().refusal != nil
  }

  private func admitUpload(_ connection: OpaquePointer) -> LogInbox {
    guard let appId = value(connection, .HEADER_KIND, "X-Ti-App-Id"), !appId.isEmpty else {
      return LogInbox(refused: 400, "invalid_argument", "an X-Ti-App-Id header is required")
    }
    let token: CloudToken
    switch authorize(connection) {
    case .success(let verified): token = verified
    case .failure(let refusal): return LogInbox(refused: refusal.status, refusal.error, refusal.message)
    }
    let limits = configuration.uploads
    let now = configuration.now()
    let admitted = uploadAccounts.withLock { accounts -> Result<Int64, UploadRefusal> in
      var account = accounts[token.deviceId, default: UploadAccount()]
      account.recentStarts.removeAll { $0 <= now - 60 }
      guard account.recentStarts.count < limits.perMinute else {
        return .failure(UploadRefusal(429, "rate_limited", "at most \(limits.perMinute) log uploads a minute"))
      }
      guard account.count < limits.quotaCount, account.bytes < limits.quotaBytes else {
        return .failure(UploadRefusal(403, "quota_exceeded", "the device's log uploads are over their quota"))
      }
      account.recentStarts.append(now)
      accounts[token.deviceId] = account
      return .success(min(limits.maximumBytes, limits.quotaBytes - account.bytes))
    }
    switch admitted {
    case .success(let allowed):
      return LogInbox(
        folder: configuration.root.appendingPathComponent("uploads"), device: token.deviceId, limits: limits,
        allowedBytes: allowed)
    case .failure(let refusal):
      return LogInbox(refused: refusal.status, refusal.error, refusal.message)
    }
  }

  /// A suspended connection, handed to the inspection queue (libmicrohttpd allows resuming it from any
  /// thread).
  private struct Parked: @unchecked Sendable {
    let connection: OpaquePointer
  }

  struct UploadRefusal: Error {
    let status: Int
    let error: String
    let message: String
    init(_ status: Int, _ error: String, _ message: String) {
      (self.status, self.error, self.message) = (status, error, message)
    }
  }

  /// The request's bearer token, verified for the served device.
  func authorize(_ connection: OpaquePointer) -> Result<CloudToken, UploadRefusal> {
    guard let authorization = value(connection, .HEADER_KIND, "Authorization"),
      authorization.hasPrefix("Bearer ")
    else { return .failure(UploadRefusal(401, "token_invalid", "an Authorization: Bearer token is required")) }
    let token: CloudToken
    do {
      token = try CloudToken.verify(
        String(authorization.dropFirst("Bearer ".count)), secret: configuration.secret, now: configuration.now())
    } catch CloudToken.Refusal.expired {
      return .failure(UploadRefusal(401, "token_expired", "the token has expired"))
    } catch {
      return .failure(UploadRefusal(401, "token_invalid", "the token is not valid"))
    }
    guard token.deviceId == index.deviceId else {
      return .failure(UploadRefusal(403, "permission_denied", "the token is for another device"))
    }
    return .success(token)
  }

  /// A piece of a request's body: kept by a log upload, dropped by anything else.
  func receive(_ request: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer) {
    guard request != Self.plainRequest else { return }
    Unmanaged<LogInbox>.fromOpaque(request).takeUnretainedValue().receive(bytes)
  }

  /// The request is over (answered, or its connection closed): its inbox goes, with a partial body.
  func completed(_ request: UnsafeMutableRawPointer) {
    guard request != Self.plainRequest else { return }
    let inbox = Unmanaged<LogInbox>.fromOpaque(request)
    if inbox.takeUnretainedValue().parked.exchange(false, ordering: .sequentiallyConsistent) { suspended.leave() }
    inbox.release()
  }

  /// The state of a request without a body to keep (never dereferenced).
  private static var plainRequest: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

  func handle(
    _ connection: OpaquePointer, path: String, method: String, request: UnsafeMutableRawPointer
  ) -> MHD_Result {
    let faults = configuration.faults
    if faults.latencyMilliseconds > 0 { usleep(UInt32(min(faults.latencyMilliseconds, 60_000)) * 1000) }
    let answer: Answer
    if request != Self.plainRequest {
      guard let uploaded = logUpload(Unmanaged<LogInbox>.fromOpaque(request).takeUnretainedValue(), connection)
      else { return .YES }  // suspended: answered once resumed
      answer = uploaded
    } else if path == "/v1/logs" {
      answer = .error(405, "method_not_allowed", "log uploads are POSTed")
    } else if method != "GET" && method != "HEAD" {
      answer = .error(405, "method_not_allowed", "only GET is served")
    } else if path == "/v1/recordings" {
      answer = listing(connection)
    } else if path.hasPrefix("/v1/objects/") {
      answer = object(String(path.dropFirst("/v1/objects/".count)), connection)
    } else if path == "/player" {
      answer = .body(200, "text/html; charset=utf-8", Data(PlayerPage.html.utf8), headers: Self.pageHeaders)
    } else if path.hasPrefix("/hls/") {
      answer = stream(String(path.dropFirst("/hls/".count)), connection)
    } else if path == "/thumbnails" || path == "/thumbnails.jpg" {
      answer = thumbnails(connection, sprite: path == "/thumbnails.jpg")
    } else {
      answer = .error(404, "not_found", "no such resource")
    }
    return send(answer, on: connection, method: method, path: path)
  }

  /// The player page runs only its own script and talks only to this server; the token in its fragment
  /// is never sent as a referrer.
  static let pageHeaders = [
    "Content-Security-Policy":
      "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' blob:; media-src 'self' blob:",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
  ]

  // MARK: Log uploads

  /// `POST /v1/logs` with `X-Ti-App-Id`: 201 `{"log_id": …, "entries": …, "bytes": …}`; nil while its
  /// archive is being inspected (the connection is suspended, and resumed to answer).
  private func logUpload(_ inbox: LogInbox, _ connection: OpaquePointer) -> Answer? {
    if inbox.refusal != nil || configuration.faults.sleeps { return answer(inbox.finish(stopping: stopping), inbox) }
    if let outcome = inbox.outcome { return answer(outcome, inbox) }
    // Entered before `stopping` is read: `stop()` sets it, then waits for the group.
    suspended.enter()
    guard !stopping.load(ordering: .sequentiallyConsistent) else {
      suspended.leave()
      return .error(503, "unavailable", "the server is stopping")
    }
    inbox.parked.store(true, ordering: .sequentiallyConsistent)
    MHD_suspend_connection(connection)
    let parked = Parked(connection: connection)
    inspections.async { [self] in
      _ = inbox.finish(stopping: stopping)
      MHD_resume_connection(parked.connection)
    }
    return nil
  }

  private func answer(_ outcome: LogInbox.Outcome, _ inbox: LogInbox) -> Answer {
    switch outcome {
    case .refused(let status, let error, let message):
      return .error(status, error, message)
    case .stored(let logId, let entries, let bytes):
      if let device = inbox.device {
        uploadAccounts.withLock { accounts in
          accounts[device, default: UploadAccount()].count += 1
          accounts[device, default: UploadAccount()].bytes += bytes
        }
      }
      let body = try? JSONSerialization.data(
        withJSONObject: ["log_id": logId, "entries": entries, "bytes": bytes] as [String: Any], options: [.sortedKeys])
      return .body(201, "application/json", body ?? Data())
    }
  }

  /// Before the daemon stops: every suspended upload has been answered (inspections under way or queued
  /// end early with 503).
  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    suspended.wait()
  }

  // MARK: Listing

  private func listing(_ connection: OpaquePointer) -> Answer {
    let faults = configuration.faults
    if let status = faults.listingStatus {
      return .error(status, status == 429 ? "rate_limited" : "internal", "injected listing failure")
    }
    if case .failure(let refusal) = authorize(connection) {
      return .error(refusal.status, refusal.error, refusal.message)
    }
    if let allowed = faults.tokenRequests {
      let count = listingRequests.withLock { count in
        count += 1
        return count
      }
      if count > allowed { return .error(401, "token_expired", "the token has expired (injected)") }
    }
    if faults.malformedListing { return .body(200, "application/json", Data("{\"segments\": [".utf8)) }
    guard let startText = value(connection, .GET_ARGUMENT_KIND, "start_ms"),
      let endText = value(connection, .GET_ARGUMENT_KIND, "end_ms"),
      let start = Int64(startText), let end = Int64(endText)
    else { return .error(400, "invalid_argument", "start_ms and end_ms must be integers") }
    let span = end.subtractingReportingOverflow(start)
    guard start < end, !span.overflow, span.partialValue <= 864_000_000 else {
      return .error(400, "invalid_argument", "start_ms < end_ms and a span of at most 10 days are required")
    }
    let expires = configuration.now() &+ configuration.urlLifetimeSeconds
    var segments: [RecordingIndex.Segment] = []
    for var segment in index.segments where segment.startMs < end && segment.endMs > start {
      if case .success(.remote(let url)) = files[segment.id] {
        segment.url = url
        segments.append(segment)
        continue
      }
      segment.url = "objects/\(Self.pathComponent(segment.id))?expires=\(expires)&sig=\(signature(segment.id, expires))"
      segments.append(segment)
    }
    do {
      return .body(200, "application/json", try RecordingIndex(deviceId: index.deviceId, segments: segments).encoded())
    } catch {
      return .error(500, "internal", "cannot encode the listing")
    }
  }

  /// A presigned URL's `expires` when its `sig` is `signing(expires)` and it has not expired (403
  /// `signature_invalid` / `signature_expired` otherwise); nil when the request has no `expires`.
  func presignature(
    _ connection: OpaquePointer, signing: (Int64) -> String
  ) -> Result<Int64, NotServed>? {
    guard let expiresText = value(connection, .GET_ARGUMENT_KIND, "expires") else { return nil }
    guard let expires = Int64(expiresText), let sig = value(connection, .GET_ARGUMENT_KIND, "sig"),
      HMACSHA256.matches(sig, signing(expires))
    else { return .failure(NotServed(answer: .error(403, "signature_invalid", "the URL's signature is not valid"))) }
    guard expires >= configuration.now() else {
      return .failure(NotServed(answer: .error(403, "signature_expired", "the URL has expired")))
    }
    return .success(expires)
  }

  /// `start` and `end` as a range a request may name: `start < end`, valid times, at most 10 days apart.
  static func isRange(_ start: Int64, _ end: Int64) -> Bool {
    let span = end.subtractingReportingOverflow(start)
    return start < end && !span.overflow && span.partialValue <= 864_000_000
      && MediaTime.validMilliseconds.contains(start) && MediaTime.validMilliseconds.contains(end)
  }

  private func signature(_ id: String, _ expires: Int64) -> String {
    HMACSHA256.hex("\(id).\(expires)", key: configuration.secret)
  }

  private static func pathComponent(_ id: String) -> String {
    id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? id
  }

  // MARK: Objects

  private func object(_ id: String, _ connection: OpaquePointer) -> Answer {
    switch presignature(connection, signing: { signature(id, $0) }) {
    case .success: break
    case .failure(let refusal): return refusal.answer
    case nil: return .error(403, "signature_invalid", "the URL's signature is not valid")
    }
    let faults = configuration.faults
    let attempt = objectRequests.withLock { counts in
      counts[id, default: 0] += 1
      return counts[id]!
    }
    if attempt <= faults.expireSignaturesFirst {
      return .error(403, "signature_expired", "the URL has expired (injected)")
    }
    if attempt <= faults.resetFirst { return .reset }
    if attempt <= faults.failFirst || chance(faults.failRate) {
      return .error(faults.failStatus, faults.failStatus == 429 ? "rate_limited" : "internal", "injected failure")
    }
    let real: String
    switch servablePath(id) {
    case .success(let path): real = path
    case .failure(let refusal): return refusal.answer
    }
    let descriptor = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard descriptor >= 0 else { return .error(404, "not_found", "no object \(id)") }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      return refused(id, "its file is not a regular file")
    }
    let size = Int64(status.st_size)
    var offset: Int64 = 0
    var length = size
    var partial = false
    // RFC 9110 §14.2: a range unit other than bytes is ignored (the whole body, 200), and so are several
    // ranges (a server may ignore any Range; one body in several parts is not served).
    if !faults.ignoresRanges, let range = value(connection, .HEADER_KIND, "Range"), range.hasPrefix("bytes="),
      !range.contains(",")
    {
      guard let bytes = Self.byteRange(range, size: size) else {
        close(descriptor)
        return .unsatisfiable(size)
      }
      offset = bytes.first
      length = bytes.last - bytes.first + 1
      partial = true
    }
    let truncate = attempt <= faults.truncateFirst || chance(faults.truncateRate)
    return .file(
      descriptor: descriptor, offset: offset, length: length, size: size, partial: partial,
      cutAt: truncate ? length / 2 : nil,
      stallsAt: faults.stalledObjects.contains(id) ? max(0, ServerFaults.stallBytes - offset) : nil)
  }

  /// Why an object is not served.
  struct NotServed: Error {
    let answer: Answer
  }

  /// The real path of object `id`'s file, when the server serves it: a file of the library whose path,
  /// symlinks resolved, is still under objects/ (a link out of the library is not served, whoever holds
  /// a signed URL).
  func servablePath(_ id: String) -> Result<String, NotServed> {
    guard let entry = files[id] else { return .failure(NotServed(answer: .error(404, "not_found", "no object \(id)"))) }
    let url: URL
    switch entry {
    case .success(.file(let file)): url = file
    case .success(.remote):
      return .failure(NotServed(answer: .error(404, "not_found", "object \(id) is served by its own host")))
    case .failure(let refusal): return .failure(NotServed(answer: refused(id, refusal.reason)))
    }
    guard let real = Self.realPath(url.path) else {
      return .failure(NotServed(answer: .error(404, "not_found", "no object \(id)")))
    }
    guard let folder = objectsFolder, real.hasPrefix(folder + "/") else {
      return .failure(
        NotServed(answer: refused(id, "its file resolves to \(real), outside \(configuration.root.path)/objects")))
    }
    return .success(real)
  }

  /// Whether an object a graph lists from the library's `index.json` is one the server serves: its id is
  /// in the server's own checked index and its file, symlinks resolved, is that entry's (an entry
  /// added or changed since the server started, or a second entry with the same id, is not read).
  func serves(_ segment: RecordingIndex.Segment) -> Bool {
    guard case .success(let path) = servablePath(segment.id), let url = URL(string: segment.url), url.isFileURL,
      let real = Self.realPath(url.path)
    else { return false }
    return real == path
  }

  /// A 500 for an object the library names but the server will not serve, with a log line naming the
  /// entry for the operator.
  private func refused(_ id: String, _ reason: String) -> Answer {
    configuration.log?("index entry \(id.oneLine) is not served: \(reason.oneLine)")
    return .error(500, "internal", "the library's entry for this object cannot be served")
  }

  /// `bytes=N-`, `bytes=N-M` or `bytes=-N` (the last N bytes) inside a body of `size` bytes, as (first,
  /// last) inclusive; nil when the header is malformed, names several ranges, starts past the end or
  /// asks for no byte (416).
  static func byteRange(_ header: String, size: Int64) -> (first: Int64, last: Int64)? {
    guard header.hasPrefix("bytes="), size > 0 else { return nil }
    let spec = header.dropFirst("bytes=".count)
    let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }) else { return nil }
    // Positions past what an Int64 holds are past any file's end (RFC 7233: the last position is clamped).
    let number = { (digits: Substring) -> Int64 in Int64(digits) ?? .max }
    if parts[0].isEmpty {
      // `bytes=-N`: the last N bytes, the whole file when N exceeds it; `bytes=-0` and `bytes=-` none.
      guard !parts[1].isEmpty else { return nil }
      let count = number(parts[1])
      guard count > 0 else { return nil }
      return (size - min(count, size), size - 1)
    }
    guard let first = Int64(parts[0]), first < size else { return nil }
    if parts[1].isEmpty { return (first, size - 1) }
    let last = number(parts[1])
    guard last >= first else { return nil }
    return (first, min(last, size - 1))
  }

  private func chance(_ probability: Double) -> Bool {
    guard probability > 0 else { return false }
    return random.withLock { $0.nextUnit() } < probability
  }

  func value(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ key: String) -> String? {
    MHD_lookup_connection_value(connection, kind, key).map { String(cString: $0) }
  }

  // MARK: Answers

  enum Answer {
    case error(Int, String, String)
    case body(Int, String, Data, headers: [String: String] = [:])
    case file(
      descriptor: Int32, offset: Int64, length: Int64, size: Int64, partial: Bool, cutAt: Int64?, stallsAt: Int64?)
    case unsatisfiable(Int64)
    case reset
  }

  private func send(_ answer: Answer, on connection: OpaquePointer, method: String, path: String) -> MHD_Result {
    let status: Int
    let response: OpaquePointer?
    var bytes: Int64 = 0
    switch answer {
    case .reset:
      configuration.log?("\(method.oneLine) \(path.oneLine) reset (injected)")
      return .NO
    case .error(let code, let error, let message):
      let body = (try? JSONSerialization.data(withJSONObject: ["error": error, "message": message])) ?? Data()
      status = code
      response = Self.buffer(body, type: "application/json")
    case .body(let code, let type, let body, let headers):
      status = code
      bytes = Int64(body.count)
      response = Self.buffer(body, type: type)
      if let response { for (name, value) in headers { MHD_add_response_header(response, name, value) } }
    case .unsatisfiable(let size):
      status = 416
      response = Self.buffer(
        Data("{\"error\":\"range_not_satisfiable\",\"message\":\"bad Range\"}".utf8), type: "application/json")
      if let response { MHD_add_response_header(response, "Content-Range", "bytes */\(size)") }
    case .file(let descriptor, let offset, let length, let size, let partial, let cutAt, let stallsAt):
      status = partial ? 206 : 200
      bytes = stallsAt.map { min($0, length) } ?? cutAt ?? length
      if cutAt != nil || stallsAt != nil || configuration.faults.bytesPerSecond > 0 {
        let body = ShapedBody(
          descriptor: descriptor, offset: offset, length: length, cutAt: cutAt, stallsAt: stallsAt,
          bytesPerSecond: configuration.faults.bytesPerSecond, stallSeconds: configuration.faults.stallSeconds
        ) { [weak self] in self?.stopping.load(ordering: .relaxed) ?? true }
        response = MHD_create_response_from_callback(
          UInt64(length), 64 * 1024,
          { context, position, buffer, maximum in
            Unmanaged<ShapedBody>.fromOpaque(context!).takeUnretainedValue().read(
              at: Int64(position), into: buffer!, maximum: maximum)
          }, Unmanaged.passRetained(body).toOpaque(),
          { context in Unmanaged<ShapedBody>.fromOpaque(context!).release() })
      } else {
        // libmicrohttpd sends the file with sendfile() and closes the descriptor with the response.
        response = MHD_create_response_from_fd_at_offset64(UInt64(length), descriptor, UInt64(offset))
        if response == nil { close(descriptor) }
      }
      if let response {
        MHD_add_response_header(response, "Content-Type", "application/octet-stream")
        MHD_add_response_header(response, "Accept-Ranges", "bytes")
        if partial {
          MHD_add_response_header(response, "Content-Range", "bytes \(offset)-\(offset + length - 1)/\(size)")
        }
      }
    }
    guard let response else { return .NO }
    defer { MHD_destroy_response(response) }
    // What the client sent is escaped: a decoded `%0a` or `%1b[` can neither forge a line nor drive a terminal.
    configuration.log?("\(method.oneLine) \(path.oneLine) \(status) \(bytes)")
    return MHD_queue_response(connection, UInt32(status), response)
  }

  private static func buffer(_ body: Data, type: String) -> OpaquePointer? {
    let response = body.withUnsafeBytes { raw in
      MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
    }
    if let response { MHD_add_response_header(response, "Content-Type", type) }
    return response
  }
}

/// A body sent through a callback: cut short (a truncation fault), stalled (nothing more after some
/// bytes, for a while, then closed) or paced (a bandwidth limit).
private final class ShapedBody: Sendable {
  let descriptor: Int32
  let offset: Int64
  let length: Int64
  let cutAt: Int64?
  let stallsAt: Int64?
  let bytesPerSecond: Int
  let stallSeconds: Int
  /// True once the server stops: a stall ends then (the server's shutdown waits for its connections).
  let stopping: @Sendable () -> Bool

  init(
    descriptor: Int32, offset: Int64, length: Int64, cutAt: Int64?, stallsAt: Int64?, bytesPerSecond: Int,
    stallSeconds: Int, stopping: @escaping @Sendable () -> Bool
  ) {
    self.stallSeconds = stallSeconds
    self.stopping = stopping
    self.descriptor = descriptor
    self.offset = offset
    self.length = length
    self.cutAt = cutAt
    self.stallsAt = stallsAt
    self.bytesPerSecond = bytesPerSecond
  }

  func read(at position: Int64, into buffer: UnsafeMutablePointer<CChar>, maximum: Int) -> Int {
    if let stallsAt, position >= stallsAt {
      // Silent on a connection of its own (a stall fault serves each on a thread), then closed unfinished;
      // at once when the server stops.
      for _ in 0..<(max(0, stallSeconds) * 20) where !stopping() { usleep(50_000) }
      return cmhd_reader_end_with_error
    }
    let end = min(cutAt ?? length, stallsAt ?? length)
    if position >= end { return cutAt == nil ? cmhd_reader_end_of_stream : cmhd_reader_end_with_error }
    var count = Int(min(Int64(maximum), end - position))
    if bytesPerSecond > 0 {
      // Slices of 1/50 s, so a cancelled client is noticed quickly.
      count = min(count, max(1, bytesPerSecond / 50))
      usleep(UInt32(min(Int64(count) * 1_000_000 / Int64(bytesPerSecond), 1_000_000)))
    }
    let got = pread(descriptor, buffer, count, off_t(offset + position))
    return got > 0 ? got : cmhd_reader_end_with_error
  }

  deinit { close(descriptor) }
}

/// A small seeded generator for the random faults (reproducible runs).
struct SplitMix {
  var state: UInt64

  mutating func nextUnit() -> Double {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    return Double(z >> 11) / Double(1 << 53)
  }
}
