import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// The cloud client against a hostile server (issue 24's probes that already held, kept so none
/// regresses): redirects are not followed and the token never leaves the listing host; object URLs are
/// http(s) only; lengths that lie, endless and garbled bodies end a request with a typed error.
@Suite struct HostileServerTests {
  private let range = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 60_000)

  private var policy: TransferPolicy {
    var policy = TransferPolicy()
    // Generous: these servers answer at once, and a loaded machine must not turn a slow first byte into
    // a second attempt (the tests count requests).
    policy.connectTimeout = .seconds(10)
    policy.stallTimeout = .seconds(30)
    policy.backoff = .milliseconds(5)
    policy.maximumBackoff = .milliseconds(10)
    return policy
  }

  private func list(_ server: ScriptedServer, token: String = "the-token") throws -> Result<RecordingIndex, MediaError>
  {
    let service = CloudService(endpoint: URL(string: "http://127.0.0.1:\(server.port)")!, policy: policy)
    return try blockingWait { service.listSegments(in: range, token: token, completion: $0) }
  }

  /// A listing body of one 1 KB object at `url`.
  private func listing(objectAt url: String, count: Int = 1) throws -> Data {
    let segments = (0..<count).map { position in
      RecordingIndex.Segment(
        id: "s\(position)", startMs: recordingStart + Int64(position) * 1000,
        endMs: recordingStart + Int64(position + 1) * 1000, url: url, size: 1024,
        sha256: String(repeating: "0", count: 64), key: nil, tracks: [])
    }
    return try RecordingIndex(deviceId: "cam", segments: segments).encoded()
  }

  private func failure(_ result: Result<RecordingIndex, MediaError>) -> MediaError? {
    if case .failure(let error) = result { return error }
    return nil
  }

  @Test func redirectsAreNotFollowedAndTheTokenStaysHome() throws {
    let elsewhere = try ScriptedServer { _ in ScriptedServer.answer(200, Data("{}".utf8)) }
    for status in [301, 302, 303, 307, 308] {
      let redirecting = try ScriptedServer { _ in
        ScriptedServer.answer(status, headers: ["Location: http://127.0.0.1:\(elsewhere.port)/v1/recordings"])
      }
      let error = try #require(failure(try list(redirecting)), "\(status)")
      #expect(error.kind == .serviceUnavailable && error.message.contains("\(status)"), "\(error)")
      #expect(redirecting.requests.count == 1)
    }
    // A redirect to itself is one request, not a loop.
    let port = Locked<UInt16>(0)
    let loop = try ScriptedServer { _ in
      ScriptedServer.answer(302, headers: ["Location: http://127.0.0.1:\(port.withLock { $0 })/v1/recordings"])
    }
    port.withLock { $0 = loop.port }
    #expect(failure(try list(loop))?.kind == .serviceUnavailable)
    #expect(loop.requests.count == 1)
    #expect(elsewhere.requests.isEmpty)
  }

  @Test func objectURLsAreHTTPOnlyAndGetNoToken() throws {
    for url in [
      "file:///etc/passwd", "gopher://127.0.0.1:70/x", "ftp://127.0.0.1/x", "dict://127.0.0.1:11211/stat",
      "ldap://127.0.0.1/x", "javascript:alert(1)", "data:text/plain,x", "scp://127.0.0.1/x",
    ] {
      let body = try listing(objectAt: url)
      let server = try ScriptedServer { _ in ScriptedServer.answer(200, body) }
      let error = try #require(failure(try list(server)), "\(url)")
      #expect(error.kind == .serviceUnavailable && error.message.contains("bad object URL"), "\(url): \(error)")
    }
    // An http object host (another port) gets the presigned URL only, never the token.
    let objects = try ScriptedServer { _ in ScriptedServer.answer(404) }
    let body = try listing(objectAt: "http://127.0.0.1:\(objects.port)/o/s0?sig=abc")
    let front = try ScriptedServer { _ in ScriptedServer.answer(200, body) }
    let listed = try list(front, token: "secret-token-123").get()
    let service = CloudService(endpoint: URL(string: "http://127.0.0.1:\(front.port)")!, policy: policy)
    let fetched = try blockingWait { service.fetchObject(listed.segments[0], completion: $0) }
    guard case .failed(let error) = fetched else {
      Issue.record("a 404 object was fetched: \(fetched)")
      return
    }
    #expect(error.gapReason == .notFound, "\(error)")
    #expect(front.requests.allSatisfy { $0.contains("Authorization: Bearer secret-token-123") })
    #expect(objects.requests.count == 1)
    #expect(objects.requests.allSatisfy { !$0.lowercased().contains("authorization") && !$0.contains("secret-token") })
  }

  @Test func lengthsThatLieAndGarbledBodiesEndAListingWithATypedError() throws {
    // Shorter than its Content-Length, then closed: retried, then given up.
    let short = try ScriptedServer { _ in
      .bytes(Data("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{\"segm".utf8))
    }
    #expect(failure(try list(short))?.kind == .serviceUnavailable)
    #expect(short.requests.count == TransferPolicy().attemptsWithoutProgress)
    // Chunked garbage.
    let garbled = try ScriptedServer { _ in
      .bytes(Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot a chunk\r\n".utf8))
    }
    #expect(failure(try list(garbled))?.kind == .serviceUnavailable)
    // An endless body: cut at the listing's limit (256 MiB), not kept growing.
    let endless = try ScriptedServer { _ in .endless(head: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n") }
    let error = try #require(failure(try list(endless)))
    #expect(error.kind == .serviceUnavailable && error.message.contains("larger than"), "\(error)")
    #expect(endless.requests.count == 1)
    // A body that is not a listing.
    let wrong = try ScriptedServer { _ in ScriptedServer.answer(200, Data("[1, 2, 3]".utf8)) }
    #expect(failure(try list(wrong)) != nil)
  }

  @Test func aListingOfAHundredThousandEntriesIsRead() throws {
    let body = try listing(objectAt: "objects/x", count: 100_000)
    let server = try ScriptedServer { _ in ScriptedServer.answer(200, body) }
    let listed = try list(server).get()
    #expect(listed.segments.count == 100_000)
    #expect(listed.segments.allSatisfy { $0.url == "http://127.0.0.1:\(server.port)/v1/objects/x" })
  }
}
