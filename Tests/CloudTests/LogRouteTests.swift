import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// The reference server's log-upload route (`POST /v1/logs`) against curl, the independent client.
@Suite struct LogRouteTests {
  /// POSTs `body` with curl; the status and the answer's body.
  private func post(_ body: URL, to url: String, headers: [String]) throws -> (Int, String) {
    var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "--data-binary", "@\(body.path)"]
    for header in headers { arguments += ["-H", header] }
    let output = try run("/usr/bin/curl", arguments + [url])
    let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? -1, lines.dropLast().joined(separator: "\n"))
  }

  /// What the SDK sends: the app id and the device's token.
  private func post(_ body: URL, to served: ServedLibrary, token: String? = nil) throws -> (Int, String) {
    try post(
      body, to: "\(served.server.endpoint)/v1/logs",
      headers: ["X-Ti-App-Id: test-app", "Authorization: Bearer \(token ?? served.token)"])
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
    let (status, body) = try post(archive, to: served)
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
      let (status, answer) = try post(body, to: served)
      #expect(status == 400 && answer.contains("invalid_archive"), "\(body.lastPathComponent): \(status) \(answer)")
    }
    let (noApp, _) = try post(
      archive, to: "\(served.server.endpoint)/v1/logs", headers: ["Authorization: Bearer \(served.token)"])
    #expect(noApp == 400)
    let get = try run(
      "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(served.server.endpoint)/v1/logs"])
    #expect(get == "405")
    // A POST elsewhere is not kept either.
    let (elsewhere, _) = try post(archive, to: "\(served.server.endpoint)/v1/recordings", headers: [])
    #expect(elsewhere == 405)
    #expect(uploads(served).isEmpty)
  }

  /// A gzip-compressed tar of `bytes` of zeros (what a bomb is) or of random bytes.
  private func archive(_ bytes: Int, zeros: Bool, in directory: URL) throws -> URL {
    let name = zeros ? "zeros" : "noise"
    let file = directory.appendingPathComponent(name)
    try (zeros ? Data(count: bytes) : Data((0..<bytes).map { _ in UInt8.random(in: 0...255) }))
      .write(to: file)
    let archive = directory.appendingPathComponent("\(name).tar.gz")
    _ = try run("/usr/bin/tar", ["-czf", archive.path, "-C", directory.path, name])
    return archive
  }

  @Test func anUploadNeedsAValidTokenOfTheServedDevice() throws {
    let served = try ServedLibrary(seconds: 3)
    let scratch = try TemporaryDirectory()
    let logs = try archive(10_000, zeros: false, in: scratch.url)
    let endpoint = "\(served.server.endpoint)/v1/logs"
    let (none, noneBody) = try post(logs, to: endpoint, headers: ["X-Ti-App-Id: test-app"])
    #expect(none == 401 && noneBody.contains("token_invalid"))
    let (forged, _) = try post(logs, to: served, token: "v1.\(served.deviceId).9999999999.00")
    #expect(forged == 401)
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 1).signed(secret: secret)
    let (late, lateBody) = try post(logs, to: served, token: expired)
    #expect(late == 401 && lateBody.contains("token_expired"))
    let other = CloudToken(deviceId: "someone-else", expires: now() + 3600).signed(secret: secret)
    let (foreign, _) = try post(logs, to: served, token: other)
    #expect(foreign == 403)
    #expect(uploads(served).isEmpty)
    let (valid, _) = try post(logs, to: served)
    #expect(valid == 201)
    #expect(uploads(served).count == 1)
  }

  @Test func aBombIsRefusedAfterReadingAtMostItsCapAndLeavesNothing() throws {
    let served = try ServedLibrary(seconds: 3)
    let scratch = try TemporaryDirectory()
    // 64 MiB of zeros compress about 1000×: far past 100× its size.
    let bomb = try archive(64 << 20, zeros: true, in: scratch.url)
    #expect(try FileManager.default.attributesOfItem(atPath: bomb.path)[.size] as? Int ?? 0 < 1 << 20)
    let (status, body) = try post(bomb, to: served)
    #expect(status == 413 && body.contains("unpacks to more than"), "\(body)")
    #expect(uploads(served).isEmpty)
    // Ordinary logs (they compress about 10×) are kept.
    let logs = scratch.url.appendingPathComponent("log")
    let lines = (0..<20_000).map {
      "2026-12-03T19:\($0 % 60):\($0 % 59) replay \($0) played \($0 * 40) ms of camera \($0 % 7)\n"
    }
    try Data(lines.joined().utf8).write(to: logs)
    let tarred = scratch.url.appendingPathComponent("log.tar.gz")
    _ = try run("/usr/bin/tar", ["-czf", tarred.path, "-C", scratch.url.path, "log"])
    let (kept, _) = try post(tarred, to: served)
    #expect(kept == 201)
  }

  @Test func eachDeviceIsLimitedInRateCountAndBytes() throws {
    let scratch = try TemporaryDirectory()
    let logs = try archive(100_000, zeros: false, in: scratch.url)
    let size = Int64(try FileManager.default.attributesOfItem(atPath: logs.path)[.size] as? Int ?? 0)
    // Rate: the seventh upload of a minute is refused; a minute later it is accepted.
    let clock = Locked<Int64>(now())
    var limits = UploadLimits()
    limits.perMinute = 6
    let rated = try ServedLibrary(seconds: 3, uploads: limits, now: { clock.withLock { $0 } })
    var statuses = try (0..<7).map { _ in try post(logs, to: rated).0 }
    #expect(statuses == [201, 201, 201, 201, 201, 201, 429])
    clock.withLock { $0 += 61 }
    #expect(try post(logs, to: rated).0 == 201)
    // Count: at most 2 stored.
    limits = UploadLimits()
    limits.quotaCount = 2
    let counted = try ServedLibrary(seconds: 3, uploads: limits)
    statuses = try (0..<3).map { _ in try post(logs, to: counted).0 }
    #expect(statuses == [201, 201, 403])
    #expect(uploads(counted).count == 2)
    // Bytes: room for one and a half uploads; the second is cut off at the quota and refused.
    limits = UploadLimits()
    limits.quotaBytes = size + size / 2
    let sized = try ServedLibrary(seconds: 3, uploads: limits)
    statuses = try (0..<3).map { _ in try post(logs, to: sized).0 }
    #expect(statuses == [201, 413, 413])
    #expect(uploads(sized).count == 1)
  }
}
