import Foundation
import MediaTestSupport
import PipelineGraph

/// One TCP connection to a loopback port, for requests curl will not send as they are (raw paths,
/// oversized or pipelined requests, connections left half-open).
final class RawConnection {
  private let descriptor: Int32

  /// Connects to 127.0.0.1:`port`.
  init(port: UInt16) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      close(descriptor)
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
    }
  }

  /// Sends `bytes`; false when the peer closed before taking them all (a refused oversized request).
  @discardableResult func send(_ bytes: Data) -> Bool { sendAll(bytes, on: descriptor) }

  @discardableResult func send(_ text: String) -> Bool { send(Data(text.utf8)) }

  /// Everything the peer sends until it closes the connection, or until `quiet` passes without a byte
  /// (a deadline, so that a server that never closes fails the test instead of hanging it).
  func receive(quiet: Duration = .seconds(20)) -> Data {
    var received = Data()
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    let milliseconds = Int32(quiet.components.seconds * 1000)
    while true {
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let ready = poll(&poller, 1, milliseconds)
      if ready < 0 && errno == EINTR { continue }
      guard ready > 0 else { return received }
      let count = recv(descriptor, &buffer, buffer.count, 0)
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return received }
      received.append(contentsOf: buffer[0..<count])
    }
  }

  /// Stops sending (the server sees the end of the request stream) but keeps reading.
  func finishSending() { shutdown(descriptor, Int32(SHUT_WR)) }

  deinit { close(descriptor) }
}

/// The status codes of the HTTP answers in `bytes`, in order (several when requests were pipelined:
/// each answer's body is skipped by its `Content-Length`).
func statusCodes(_ bytes: Data) -> [Int] {
  var codes: [Int] = []
  var rest = bytes[...]
  while let end = rest.range(of: Data("\r\n\r\n".utf8)) {
    let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self)
    guard head.hasPrefix("HTTP/1."), let code = Int(head.dropFirst(9).prefix(3)) else { break }
    codes.append(code)
    let length =
      head.lowercased().components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
      .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    rest = rest[min(rest.endIndex, end.upperBound + length)...]
  }
  return codes
}

/// A loopback port that accepts connections and reads what comes, but never answers: a host whose
/// headers never come. Counts the connections it accepted; stops on release.
final class BlackHole: @unchecked Sendable {  // the descriptor is only closed in deinit
  let port: UInt16
  private let listener: Int32
  private let accepted = Locked<[Int32]>([])
  /// Signalled at each accepted connection.
  private let arrived = NSCondition()

  init() throws {
    (listener, port) = try listenOnLoopback()
    let accepted = self.accepted
    let arrived = self.arrived
    // Accepts until the listener is shut down; the accepted sockets stay open (and unread: the kernel
    // buffers a request) until the hole goes.
    acceptUntilShutDown(listener) { connection in
      accepted.withLock { $0.append(connection) }
      arrived.withLock { arrived.broadcast() }
    }
  }

  /// Connections accepted so far.
  var connections: Int { accepted.withLock { $0.count } }

  /// Connections accepted once there are at least `count`, or when ``testDeadline`` has passed (the
  /// accept thread notes a connection a moment after the kernel took it).
  func connections(atLeast count: Int) -> Int {
    let deadline = Date(timeIntervalSinceNow: Double(testDeadline.components.seconds))
    return arrived.withLock {
      while connections < count, arrived.wait(until: deadline) {}
      return connections
    }
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    for connection in accepted.withLock({ $0 }) { close(connection) }
  }
}

/// A loopback HTTP server that answers every request with what its script says, to play a hostile
/// cloud: redirects, bad lengths, endless or garbled bodies. Records each request's head.
final class ScriptedServer: @unchecked Sendable {  // the descriptor is only closed in deinit
  /// What to send back.
  enum Reply: Sendable {
    /// These bytes (a whole answer, head and body), then the connection is closed.
    case bytes(Data)
    /// This head, then zeros until the client goes away.
    case endless(head: String)
  }

  let port: UInt16
  private let listener: Int32
  private let heads = Locked<[String]>([])
  private let open = Locked<[Int32]>([])

  /// Serves `script`, called with each request's head (request line and headers).
  init(_ script: @escaping @Sendable (String) -> Reply) throws {
    (listener, port) = try listenOnLoopback()
    let heads = self.heads
    let open = self.open
    acceptUntilShutDown(listener) { connection in
      open.withLock { $0.append(connection) }
      Thread { Self.serve(connection, script, heads, open) }.start()
    }
  }

  /// The heads of the requests received so far.
  var requests: [String] { heads.withLock { $0 } }

  private static func serve(
    _ connection: Int32, _ script: @Sendable (String) -> Reply, _ heads: Locked<[String]>, _ open: Locked<[Int32]>
  ) {
    var head = Data()
    var byte: UInt8 = 0
    while !head.suffix(4).elementsEqual("\r\n\r\n".utf8), head.count < 1 << 20 {
      guard recv(connection, &byte, 1, 0) == 1 else {
        open.withLock { $0.removeAll { $0 == connection } }
        close(connection)
        return
      }
      head.append(byte)
    }
    let text = String(decoding: head, as: UTF8.self)
    heads.withLock { $0.append(text) }
    func write(_ bytes: Data) -> Bool { sendAll(bytes, on: connection) }
    switch script(text) {
    case .bytes(let bytes): _ = write(bytes)
    case .endless(let head):
      let zeros = Data(count: 64 * 1024)
      guard write(Data(head.utf8)) else { break }
      while write(zeros) {}
    }
    // The client sees the end of the answer. The thread closes its own descriptor, taken out of the
    // server's list first: the server's deinit never touches a number another test may have reused.
    shutdown(connection, Int32(SHUT_RDWR))
    open.withLock { $0.removeAll { $0 == connection } }
    close(connection)
  }

  /// An answer with `status`, `headers` and `body` (with its Content-Length unless `headers` set one).
  static func answer(_ status: Int, _ body: Data = Data(), headers: [String] = []) -> Reply {
    var lines = ["HTTP/1.1 \(status) Whatever"] + headers
    if !headers.contains(where: {
      $0.lowercased().hasPrefix("content-length:") || $0.lowercased().hasPrefix("transfer-encoding:")
    }) {
      lines.append("Content-Length: \(body.count)")
    }
    lines.append("Connection: close")
    return .bytes(Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body)
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    // Connections still being served end (their threads close them), under the list's lock so that none
    // is closed and reused meanwhile.
    open.withLock { connections in
      for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
    }
  }
}

/// Writes all of `bytes` to `descriptor`; false when the peer closed first.
private func sendAll(_ bytes: Data, on descriptor: Int32) -> Bool {
  bytes.withUnsafeBytes { buffer in
    var sent = 0
    while sent < buffer.count {
      let wrote = send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
      if wrote < 0 && errno == EINTR { continue }
      guard wrote > 0 else { return false }
      sent += wrote
    }
    return true
  }
}

/// A socket listening on 127.0.0.1 at a free port.
private func listenOnLoopback() throws -> (descriptor: Int32, port: UInt16) {
  let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, $0, &length) == 0
    }
  }
  guard bound else {
    close(listener)
    throw POSIXError(.EADDRINUSE)
  }
  return (listener, UInt16(bigEndian: address.sin_port))
}

/// Accepts connections on `listener` on a thread of its own, handing each to `connected`, until the
/// listener is shut down; the thread then closes it itself (closed earlier, its number could be reused by
/// another test's socket and accepted from here).
private func acceptUntilShutDown(_ listener: Int32, _ connected: @escaping @Sendable (Int32) -> Void) {
  Thread {
    while true {
      let connection = accept(listener, nil, nil)
      if connection < 0 {
        if errno == EINTR { continue }
        close(listener)
        return
      }
      connected(connection)
    }
  }.start()
}
