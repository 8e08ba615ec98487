internal import CMicroHTTPD
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// The reference cloud server of `spec/cloud-api.md` on libmicrohttpd: listing with HMAC tokens,
/// presigned object URLs, `Range` answers, JSON errors and injected faults (``ServerFaults``), and the
/// SDK's log-upload route (`POST /v1/logs`, kept in the library's `uploads/`).
///
/// It serves one library directory (as `tipipe synth` writes it) for development, demos, tests and
/// benchmarks. Objects are sent from their file descriptors without copying unless a fault needs to
/// shape the body.
///
/// States: listening (from `init`) → stopped (``stop()``, idempotent, or deinit); ``objectRequests()``
/// keeps answering after `stop()` (the counts at that point). Thread-safe: any method from any thread;
/// requests are answered on libmicrohttpd's threads.
///
/// ```swift
/// var configuration = ServerConfiguration(root: library, secret: "s3cret")
/// configuration.port = 0
/// let server = try ReferenceServer(configuration)
/// print("http://127.0.0.1:\(server.port)")
/// ```
public final class ReferenceServer: Sendable {
  /// The port the server listens on (the one chosen when the configuration asked for 0).
  public let port: UInt16
  /// The endpoint URL clients use: `http://host:port`.
  public let endpoint: String
  private let daemon: Locked<Daemon?>
  /// Held strongly for as long as the server exists; libmicrohttpd's callbacks get it unretained, and
  /// every one of them has returned once `stop()` (also run by `deinit`) has stopped the daemon.
  private let handler: RequestHandler

  /// Loads the library's index and starts listening; throws when the index is unreadable or the address
  /// cannot be bound.
  public init(_ configuration: ServerConfiguration) throws {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = configuration.port.bigEndian
    let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
      throw MediaError(.invalidArgument, "--host must be an IPv4 address, not '\(configuration.host)'")
    }
    let handler = try RequestHandler(configuration)
    let context = Unmanaged.passUnretained(handler).toOpaque()
    let started = withUnsafePointer(to: &address) { address in
      cmhd_start(
        address, configuration.faults.sleeps ? 0 : UInt32(max(1, configuration.threads)),
        UInt32(configuration.connectionLimit),
        { context, connection, url, method, _, uploadData, uploadSize, state in
          guard let context, let connection, let url, let method, let state else { return .NO }
          let handler = Unmanaged<RequestHandler>.fromOpaque(context).takeUnretainedValue()
          let path = String(cString: url)
          let verb = String(cString: method)
          // The first call only announces the headers: a log upload gets its inbox there.
          guard let request = state.pointee else {
            let request = handler.begin(connection, path: path, method: verb)
            state.pointee = request
            // A refused upload is answered before its body is read.
            if handler.answersAtOnce(request) {
              return handler.handle(connection, path: path, method: verb, request: request)
            }
            return .YES
          }
          // Then the body, in pieces, and a last call to answer.
          if let uploadSize, uploadSize.pointee > 0 {
            handler.receive(request, UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee))
            uploadSize.pointee = 0
            return .YES
          }
          return handler.handle(connection, path: path, method: verb, request: request)
        }, context,
        { context, _, state, _ in
          guard let context, let state, let request = state.pointee else { return }
          Unmanaged<RequestHandler>.fromOpaque(context).takeUnretainedValue().completed(request)
          state.pointee = nil
        }, context)
    }
    guard let started else {
      throw MediaError(
        .ioFailed, "cannot listen on \(host):\(configuration.port) (in use, or not an address of this host)")
    }
    self.handler = handler
    daemon = Locked(Daemon(pointer: started))
    port = cmhd_bound_port(started)
    endpoint = "http://\(host):\(port)"
  }

  /// Stops listening and closes every connection; idempotent.
  public func stop() {
    let running = daemon.withLock { daemon -> Daemon? in
      defer { daemon = nil }
      return daemon
    }
    guard let running else { return }
    handler.stop()
    MHD_stop_daemon(running.pointer)
  }

  /// Requests answered so far, per object id (what the "first N requests" faults count).
  public func objectRequests() -> [String: Int] { handler.objectRequestCounts() }

  deinit { stop() }
}

/// The running daemon: libmicrohttpd's handle may be stopped from any thread, once.
private struct Daemon: @unchecked Sendable {
  let pointer: OpaquePointer
}
