import CloudServer
import Foundation
import MediaTestSupport
import Testing

/// The reference server's log-upload route (`POST /v1/logs`) against curl, the independent client.
@Suite struct LogRouteTests {
  /// POSTs `body` with curl; the status and the answer's body.
  private func post(_ body: URL, to url: String, headers: [String] = ["X-Ti-App-Id: test-app"]) throws -> (Int, String)
  {
    var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "--data-binary", "@\(body.path)"]
    for header in headers { arguments += ["-H", header] }
    let output = try run("/usr/bin/curl", arguments + [url])
    let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? -1, lines.dropLast().joined(separator: "\n"))
  }

  private func uploads(_ served: ServedLibrary) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: served.library.appendingPathComponent("uploads").path))
      ?? []).sorted()
  }

  @Test func aTarGzIsKeptUnderANewLogId() throws {
    let served = try ServedLibrary(seconds: 3)
    let scratch = try TemporaryDirectory()
    let content = scratch.url.appendingPathComponent("content")
    try FileManager.default.createDirectory(at: content, withIntermediateDirectories: true)
    try Data("a log line\n".utf8).write(to: content.appendingPathComponent("cloudstorage.log"))
    let archive = scratch.url.appendingPathComponent("logs.tar.gz")
    _ = try run("/usr/bin/tar", ["-czf", archive.path, "-C", content.path, "cloudstorage.log"])
    let (status, body) = try post(archive, to: "\(served.server.endpoint)/v1/logs")
    #expect(status == 201)
    let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    let logId = try #require(answer["log_id"] as? String)
    #expect(answer["entries"] as? Int == 1)
    #expect(uploads(served) == ["\(logId).tar.gz"])
    let kept = served.library.appendingPathComponent("uploads/\(logId).tar.gz")
    #expect(try Data(contentsOf: kept) == Data(contentsOf: archive))
  }

  @Test func hostileBodiesAreRefusedAndLeaveNothing() throws {
    let served = try ServedLibrary(seconds: 3)
    let scratch = try TemporaryDirectory()
    let garbage = scratch.url.appendingPathComponent("garbage")
    try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: garbage)
    let empty = scratch.url.appendingPathComponent("empty")
    try Data().write(to: empty)
    // A real archive cut in the middle of its member.
    let big = scratch.url.appendingPathComponent("big")
    try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).write(to: big)
    let archive = scratch.url.appendingPathComponent("big.tar.gz")
    _ = try run("/usr/bin/tar", ["-czf", archive.path, "-C", scratch.url.path, "big"])
    let whole = try Data(contentsOf: archive)
    let cut = scratch.url.appendingPathComponent("cut.tar.gz")
    try whole.prefix(whole.count / 2).write(to: cut)
    for body in [garbage, empty, cut] {
      let (status, answer) = try post(body, to: "\(served.server.endpoint)/v1/logs")
      #expect(status == 400 && answer.contains("invalid_archive"), "\(body.lastPathComponent): \(status) \(answer)")
    }
    let (noApp, _) = try post(archive, to: "\(served.server.endpoint)/v1/logs", headers: [])
    #expect(noApp == 400)
    let get = try run(
      "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(served.server.endpoint)/v1/logs"])
    #expect(get == "405")
    // A POST elsewhere is not kept either.
    let (elsewhere, _) = try post(archive, to: "\(served.server.endpoint)/v1/recordings")
    #expect(elsewhere == 405)
    #expect(uploads(served).isEmpty)
  }
}
