import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// `tipipe serve` as a child process on a free port, stopped by SIGTERM (or killed when released).
final class ServeProcess {
  let process: ChildProcess
  let endpoint: String

  init(root: URL, flags: [String] = []) throws {
    process = try tipipeChild(
      ["serve", "--root", root.path, "--port", "0", "--secret", "cli-secret", "--quiet"] + flags, captureErrors: false)
    // The first line says where it listens.
    var text = ""
    try process.readLines(of: .output) { line in
      text = line
      return false
    }
    guard text.hasPrefix("listening on "), let last = text.split(separator: " ").last else {
      process.signal(SIGKILL)
      throw MediaError(.ioFailed, "tipipe serve said '\(text)'")
    }
    endpoint = last.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Stops the server as an operator would (SIGTERM) and returns its exit status.
  func stop() throws -> Int32 {
    process.signal(SIGTERM)
    return try process.finish().status
  }
}

@Suite("tipipe serve, token, list, days and export from http:// as processes")
struct CloudCommandTests {
  func library() throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 12)
    options.gaps = [(offset: 6, length: 3)]
    try LibrarySynthesizer(options: options).write(to: directory.url)
    return directory
  }

  func token(_ library: URL, ttl: Int = 3600) throws -> String {
    let device = try RecordingIndex.load(library: library).deviceId
    let result = try tipipe(["token", "--device-id", device, "--secret", "cli-secret", "--ttl", String(ttl)])
    #expect(result.status == 0)
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  @Test func listAndDaysAgreeOnBothEndpointKinds() throws {
    let directory = try library()
    let server = try ServeProcess(root: directory.url)
    let token = try token(directory.url)
    let range = ["--start", String(recordingStart), "--end", String(recordingStart + 20_000)]
    let cloud = try tipipe(["list", "--endpoint", server.endpoint, "--token", token] + range)
    let local = try tipipe(["list", "--endpoint", "file://\(directory.url.path)", "--token", "x"] + range)
    #expect(cloud.status == 0)
    let expected =
      "{\"code\":0,\"recordings\":[{\"start_ms\":\(recordingStart),\"end_ms\":\(recordingStart + 6000)},"
      + "{\"start_ms\":\(recordingStart + 9000),\"end_ms\":\(recordingStart + 12_000)}]}\n"
    #expect(cloud.stdout == expected)
    #expect(local.stdout == expected)
    let days = ["--start-date", "2026-11-29", "--end-date", "2026-12-01", "--time-zone", "UTC"]
    let cloudDays = try tipipe(["days", "--endpoint", server.endpoint, "--token", token] + days)
    #expect(cloudDays.status == 0)
    #expect(
      cloudDays.stdout
        == "{\"code\":0,\"days\":[{\"date\":\"2026-11-29\",\"has_recording\":false},"
        + "{\"date\":\"2026-11-30\",\"has_recording\":true},{\"date\":\"2026-12-01\",\"has_recording\":false}]}\n")
    let tooMany = try tipipe(
      [
        "days", "--endpoint", server.endpoint, "--token", token, "--start-date", "2026-01-01", "--end-date",
        "2026-02-01",
      ])
    #expect(tooMany.status == 1)
    #expect(tooMany.stdout == "{\"code\":6117,\"days\":[]}\n")
    #expect(tooMany.stderr.hasPrefix("error: rangeTooLarge (6117): "))
    let expired = try tipipe(
      ["list", "--endpoint", server.endpoint, "--token", try self.token(directory.url, ttl: 0)] + range)
    #expect(expired.status == 1)
    #expect(expired.stdout == "{\"code\":6014,\"recordings\":[]}\n")
    #expect(expired.stderr.hasPrefix("error: tokenExpired (6014): "))
    #expect(try server.stop() == 0)
  }

  @Test func exportFromTheServerEqualsTheLocalExport() throws {
    let directory = try library()
    let server = try ServeProcess(root: directory.url, flags: ["--fail-first", "1", "--truncate-rate", "0.3"])
    let token = try token(directory.url)
    let out = try TemporaryDirectoryPaths()
    let common = [
      "--start", String(recordingStart + 500), "--end", String(recordingStart + 11_500), "--video-channel", "0",
      "--audio-channel", "1",
    ]
    let cloud = try tipipe(
      ["export", "--endpoint", server.endpoint, "--token", token, "--out", out.cloud, "--report", out.cloudReport]
        + common)
    let local = try tipipe(
      ["export", "--endpoint", "file://\(directory.url.path)", "--out", out.local, "--report", out.localReport] + common
    )
    #expect(cloud.status == 0, "\(cloud.stderr)")
    #expect(local.status == 0)
    #expect(try Data(contentsOf: URL(fileURLWithPath: out.cloud)) == Data(contentsOf: URL(fileURLWithPath: out.local)))
    let report = try Data(contentsOf: URL(fileURLWithPath: out.cloudReport))
    #expect(
      report
        == (try Data(contentsOf: URL(fileURLWithPath: out.localReport))).replacing(
          Data(out.local.utf8), with: Data(out.cloud.utf8)))
    #expect(try server.stop() == 0)
  }

  @Test func serveRefusesBadArgumentsAndListsItsFaults() throws {
    let help = try tipipe(["serve", "--help"])
    #expect(help.status == 0)
    for flag in [
      "--fail-first", "--fail-rate", "--fail-status", "--truncate-first", "--truncate-rate", "--reset-first",
      "--expire-signatures-first", "--latency-ms", "--bandwidth", "--token-requests", "--listing-status",
      "--malformed-listing", "--ignore-range", "--stall-object",
    ] {
      #expect(help.stdout.contains(flag), "\(flag) is not in --help")
    }
    #expect(try tipipe(["serve", "--root", "/nonexistent", "--port", "0"]).status == 1)
    #expect(try tipipe(["serve", "--root", "/tmp", "--fail-rate", "2"]).status == 2)
    #expect(try tipipe(["serve", "--root", "/tmp", "--port", "70000"]).status == 2)
    #expect(try tipipe(["list", "--endpoint", "ftp://x", "--token", "t", "--start", "0", "--end", "1"]).status == 2)
    // An empty token is a bad value, said as such (it was exit 1 "invalidArgument (6000): invalidArgument").
    let empty = try tipipe(["list", "--endpoint", "file:///tmp", "--token", "", "--start", "0", "--end", "1"])
    #expect(empty.status == 2 && empty.stderr.contains("--token is empty"), "\(empty.stderr)")
    let days = try tipipe([
      "days", "--endpoint", "file:///tmp", "--token", "", "--start-date", "2026-11-29", "--end-date", "2026-11-30",
    ])
    #expect(days.status == 2 && days.stderr.contains("--token is empty"), "\(days.stderr)")
    // `file://relative/dir` names a host `relative` and the path `/dir`: refused, not read from `/dir`.
    let relative = try tipipe(["list", "--endpoint", "file://tmp/x", "--token", "t", "--start", "0", "--end", "1"])
    #expect(relative.status == 2 && relative.stderr.contains("names the host 'tmp'"), "\(relative.stderr)")
    let local = try tipipe([
      "list", "--endpoint", "file://localhost/nonexistent-library", "--token", "t", "--start", "0", "--end", "1",
    ])
    #expect(local.status == 1, "\(local.stderr)")
    #expect(try tipipe(["list", "--endpoint", "http://127.0.0.1:1", "--start", "0", "--end", "1"]).status == 2)
  }
}

/// Output paths of one test, in a directory removed afterwards.
final class TemporaryDirectoryPaths {
  let directory: TemporaryDirectory
  var cloud: String { directory.url.appendingPathComponent("cloud.mp4").path }
  var local: String { directory.url.appendingPathComponent("local.mp4").path }
  var cloudReport: String { directory.url.appendingPathComponent("cloud.json").path }
  var localReport: String { directory.url.appendingPathComponent("local.json").path }

  init() throws { directory = try TemporaryDirectory() }
}

/// R62, Q17: a local network that is down is `networkUnavailable` (6136), said as such by list, play and
/// export; a host that refuses (its service down) is not (6123). The outage is real: a network namespace of
/// the run's own (`unshare -n`: no interface up, every connection `ENETUNREACH`).
@Suite struct NetworkOutageTests {
  /// Runs `tipipe` with `arguments` in a network namespace without a network.
  func offline(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let ended = try ChildProcess(
      "/usr/bin/unshare", ["-n", try tipipeExecutable().path] + arguments, environment: tipipeEnvironment()
    ).finish()
    return (ended.status, String(decoding: ended.output, as: UTF8.self), String(decoding: ended.errors, as: UTF8.self))
  }

  @Test func R62_Q17_aNetworkThatIsDownIsNetworkUnavailable() throws {
    let endpoint = "http://127.0.0.1:8080"
    let range = ["--start", String(recordingStart), "--end", String(recordingStart + 1000)]
    let list = try offline(["list", "--endpoint", endpoint, "--token", "t"] + range)
    #expect(list.status == 1 && list.stderr.hasPrefix("error: networkUnavailable (6136)"), "\(list.stderr)")
    #expect(list.stdout.contains("\"code\":6136"))
    let play = try offline(
      ["play", "--endpoint", endpoint, "--token", "t", "--video-channel", "0", "--pace", "fast"] + range)
    #expect(play.stdout.contains("6136"), "\(play.stdout) \(play.stderr)")
    let directory = try TemporaryDirectory()
    let export = try offline(
      [
        "export", "--endpoint", endpoint, "--token", "t", "--video-channel", "0", "--out",
        directory.url.appendingPathComponent("x.mp4").path,
      ] + range)
    #expect(export.status == 1 && export.stderr.contains("networkUnavailable (6136)"), "\(export.stderr)")
  }
}
