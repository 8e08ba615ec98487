import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// The probes of issue 24 that the reference server already held, kept so that none regresses: path
/// traversal in every encoding, forged and tampered tokens and URLs, oversized and malformed requests,
/// pipelining, and connections that never finish their request (docs/security.md).
@Suite struct ServerProbeTests {
  /// The raw answer to `request` (sent as it is, with `Connection: close` so the server ends it).
  private func ask(_ served: ServedLibrary, _ request: String) throws -> (status: Int?, text: String) {
    let connection = try RawConnection(port: served.server.port)
    connection.send(request)
    let answer = connection.receive()
    return (statusCodes(answer).first, String(decoding: answer, as: UTF8.self))
  }

  private func get(_ served: ServedLibrary, _ target: String, headers: [String] = []) throws -> (
    status: Int?, text: String
  ) {
    let lines = ["GET \(target) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"] + headers
    return try ask(served, lines.joined(separator: "\r\n") + "\r\n\r\n")
  }

  /// A listing of the first minute with `token`.
  private func listing(_ served: ServedLibrary, token: String) throws -> (status: Int?, text: String) {
    try get(
      served, "/v1/recordings?start_ms=\(recordingStart)&end_ms=\(recordingStart + 60_000)",
      headers: ["Authorization: Bearer \(token)"])
  }

  /// The server still answers an ordinary listing.
  private func answersAListing(_ served: ServedLibrary) throws -> Bool {
    try listing(served, token: served.token).status == 200
  }

  @Test func noTraversalReachesAFileOutsideTheObjects() throws {
    let served = try ServedLibrary(seconds: 3)
    let index = try String(contentsOf: served.library.appendingPathComponent("index.json"), encoding: .utf8)
    // A valid signature for a crafted id (as if the secret leaked): the id is still not an index entry.
    let expires = now() + 600
    let crafted = "../index.json"
    let signature = HMACSHA256.hex("\(crafted).\(expires)", key: secret)
    let targets = [
      "/v1/objects/../index.json", "/v1/objects/../../index.json", "/v1/objects/..%2f..%2findex.json",
      "/v1/objects/%2e%2e%2f%2e%2e%2findex.json", "/v1/objects/%252e%252e%252findex.json",
      "/v1/objects/..%5c..%5cindex.json", "/v1/objects/%c0%ae%c0%ae%c0%afindex.json",
      "/v1/objects/x%00/../../index.json", "/../index.json", "/v1/../index.json", "/index.json", "//etc/passwd",
      "/v1/objects/%2fetc%2fpasswd", "/v1/objects/..;/index.json", "/v1/objects/.%2e/index.json",
      "/v1/objects/\(crafted)?expires=\(expires)&sig=\(signature)",
      "/v1/objects/..%2findex.json?expires=\(expires)&sig=\(signature)",
    ]
    for target in targets {
      let (status, text) = try get(served, target)
      #expect(status.map { (400..<500).contains($0) } == true, "\(target): \(status as Any)")
      #expect(!text.contains(served.deviceId) && !text.contains("root:"), "\(target) leaked a file")
    }
    #expect(!index.isEmpty)
    #expect(try answersAListing(served))
  }

  @Test func forgedExpiredAndTamperedTokensAreRefused() throws {
    let served = try ServedLibrary(seconds: 3)
    let valid = served.token
    var tampered = Array(valid)
    tampered[tampered.count - 1] = tampered.last == "0" ? "1" : "0"
    let parts = valid.split(separator: ".")
    let cases: [(String, Int, String)] = [
      (
        CloudToken(deviceId: served.deviceId, expires: now() + 3600).signed(secret: "not-the-secret"), 401,
        "token_invalid"
      ),
      (CloudToken(deviceId: served.deviceId, expires: now() - 1).signed(secret: secret), 401, "token_expired"),
      (CloudToken(deviceId: "someone-else", expires: now() + 3600).signed(secret: secret), 403, "permission_denied"),
      (String(tampered), 401, "token_invalid"),
      ("\(parts[0]).\(parts[1]).\(Int64(parts[2])! + 1).\(parts[3])", 401, "token_invalid"),
      ("\(parts[0]).other.\(parts[2]).\(parts[3])", 401, "token_invalid"),
      ("v1...", 401, "token_invalid"), ("", 401, "token_invalid"),
      ("v1.\(served.deviceId).99999999999999999999.00", 401, "token_invalid"),
      (String(repeating: "A", count: 16_000), 401, "token_invalid"),
    ]
    for (token, status, error) in cases {
      let answer = try listing(served, token: token)
      #expect(answer.status == status, "\(token.prefix(80)): \(answer.status as Any)")
      #expect(answer.text.contains("\"\(error)\""), "\(token.prefix(80)): \(answer.text.suffix(200))")
      #expect(!answer.text.contains("\"segments\""))
    }
    let start = "/v1/recordings?start_ms=\(recordingStart)&end_ms=\(recordingStart + 60_000)"
    #expect(try get(served, start).status == 401)
    #expect(try get(served, start, headers: ["Authorization: Basic \(valid)"]).status == 401)
    #expect(try get(served, start, headers: ["Authorization: Bearer\(valid)"]).status == 401)
    #expect(try answersAListing(served))
  }

  @Test func tamperedAndExpiredObjectURLsAreRefused() throws {
    let clock = Locked(now())
    let served = try ServedLibrary(seconds: 3, urlLifetime: 60, now: { clock.withLock { $0 } })
    let answer = try listing(served, token: served.token)
    #expect(answer.status == 200)
    let body = try #require(answer.text.range(of: "\r\n\r\n").map { answer.text[$0.upperBound...] })
    let index = try RecordingIndex.decode(Data(body.utf8))
    let segment = try #require(index.segments.first)
    let url = try #require(URLComponents(string: segment.url))
    let query = Dictionary(uniqueKeysWithValues: (url.queryItems ?? []).map { ($0.name, $0.value ?? "") })
    let expires = try #require(query["expires"].flatMap { Int64($0) })
    let signature = try #require(query["sig"])
    let path = "/v1/\(url.path)"
    func object(_ expires: String, _ signature: String) throws -> (Int?, String) {
      let answer = try get(served, "\(path)?expires=\(expires)&sig=\(signature)")
      return (answer.status, answer.text)
    }
    #expect(try object("\(expires)", signature).0 == 200)
    let flipped = String(signature.dropLast()) + (signature.hasSuffix("0") ? "1" : "0")
    for (expiresText, sig) in [
      ("\(expires)", flipped), ("\(expires + 3600)", signature), ("\(expires)", ""), ("", signature),
      ("\(expires)", String(signature.prefix(32))), ("9223372036854775807", signature),
      ("-1", signature), ("\(expires)", String(repeating: "0", count: 64)),
    ] {
      let (status, text) = try object(expiresText, sig)
      #expect(status == 403 && text.contains("signature_invalid"), "expires=\(expiresText) sig=\(sig)")
    }
    clock.withLock { $0 = expires + 1 }
    let (status, text) = try object("\(expires)", signature)
    #expect(status == 403 && text.contains("signature_expired"))
  }

  @Test func oversizedRequestsAreRefusedAndTheServerGoesOn() throws {
    let served = try ServedLibrary(seconds: 3)
    let long = String(repeating: "a", count: 64 * 1024)
    let requests = [
      // A 64 KB path, a 1 MB header, 10,000 headers.
      "GET /v1/\(long) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "GET /v1/recordings HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 1 << 20))\r\n\r\n",
      "GET /v1/recordings HTTP/1.1\r\nHost: x\r\n"
        + (0..<10_000).map { "X-H\($0): v\r\n" }.joined() + "Connection: close\r\n\r\n",
    ]
    for request in requests {
      let connection = try RawConnection(port: served.server.port)
      connection.send(request)
      let answer = connection.receive()
      // Refused with a 4xx status, or the connection closed without an answer: never served.
      #expect(statusCodes(answer).allSatisfy { (400..<500).contains($0) }, "\(statusCodes(answer))")
    }
    #expect(try answersAListing(served))
  }

  @Test func malformedRangesAreAnsweredConsistently() throws {
    let served = try ServedLibrary(seconds: 3)
    let listed = try listing(served, token: served.token)
    let body = try #require(listed.text.range(of: "\r\n\r\n").map { listed.text[$0.upperBound...] })
    let segment = try #require(try RecordingIndex.decode(Data(body.utf8)).segments.first)
    let target = "/v1/\(segment.url)"
    let ranges = [
      "bytes=abc", "bytes=5-2", "bytes=99999999999999999999-", "bytes=-", "bytes=0-1,5-6",
      "bytes=9223372036854775807-", "bytes=-9223372036854775808", "items=0-1", "bytes= 0-1", "bytes=0-",
      "bytes=\(segment.size)-", "bytes=0-9223372036854775807", "bytes=-5", "bytes=1-1",
    ]
    for range in ranges {
      let connection = try RawConnection(port: served.server.port)
      connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\nRange: \(range)\r\nConnection: close\r\n\r\n")
      let answer = connection.receive()
      let text = String(decoding: answer, as: UTF8.self)
      let status = try #require(statusCodes(answer).first, "\(range)")
      #expect([200, 206, 416].contains(status), "\(range): \(status)")
      // Whatever the answer, its body is as long as it says.
      let split = try #require(answer.range(of: Data("\r\n\r\n".utf8)), "\(range)")
      let headers = String(decoding: answer[..<split.lowerBound], as: UTF8.self).lowercased()
      let length = headers.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
      #expect(length == answer.count - split.upperBound, "\(range): \(text.prefix(300))")
      if status == 206 {
        #expect(headers.contains("content-range: bytes "), "\(range)")
        #expect(answer.count - split.upperBound <= Int(segment.size))
      }
    }
    #expect(try answersAListing(served))
  }

  @Test func pipelinedRequestsAreAnsweredInOrder() throws {
    let served = try ServedLibrary(seconds: 3)
    let connection = try RawConnection(port: served.server.port)
    let listing = "/v1/recordings?start_ms=\(recordingStart)&end_ms=\(recordingStart + 60_000)"
    connection.send(
      "GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n"
        + "GET \(listing) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(served.token)\r\n\r\n"
        + "GET /v1/recordings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    #expect(statusCodes(connection.receive()) == [404, 200, 401])
  }

  @Test func aBodyOnAGetIsReadAndDropped() throws {
    let served = try ServedLibrary(seconds: 3)
    let body = String(repeating: "z", count: 200_000)
    let answer = try ask(
      served,
      "GET /v1/recordings?start_ms=\(recordingStart)&end_ms=\(recordingStart + 60_000) HTTP/1.1\r\nHost: x\r\n"
        + "Authorization: Bearer \(served.token)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        + body)
    #expect(answer.status == 200)
    #expect(try answersAListing(served))
  }

  @Test func halfOpenConnectionsDoNotHoldTheServer() throws {
    let served = try ServedLibrary(seconds: 3)
    // 200 connections that start a request and never finish it (a slowloris), held while others ask.
    var idle: [RawConnection] = []
    for number in 0..<200 {
      let connection = try RawConnection(port: served.server.port)
      connection.send("GET /v1/recordings?start_ms=\(number) HTTP/1.1\r\nHost: x\r\nX-Slow: ")
      idle.append(connection)
    }
    for _ in 0..<5 { #expect(try answersAListing(served)) }
    #expect(idle.count == 200)
  }
}
