import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// Secrets off the command line (issue 24): `--secret-file`/`TIPIPE_SECRET`, `--token-file`/`TIPIPE_TOKEN`,
/// the command-line forms warned about, and a public server refused with the public secret.
@Suite("Secrets come from files or the environment")
struct SecretFlagTests {
  func verifies(_ token: String, with secret: String) -> Bool {
    (try? CloudToken.verify(
      token.trimmingCharacters(in: .whitespacesAndNewlines), secret: secret, now: Int64(Date().timeIntervalSince1970)))
      != nil
  }

  @Test("tipipe token signs with --secret-file, TIPIPE_SECRET or --secret (warned), in that order")
  func secretSources() throws {
    let directory = try TemporaryDirectory()
    let file = directory.url.appendingPathComponent("secret")
    try "from-file\n".write(to: file, atomically: true, encoding: .utf8)
    let fromFile = try tipipe(["token", "--device-id", "d", "--secret-file", file.path])
    #expect(fromFile.status == 0 && verifies(fromFile.stdout, with: "from-file"), "\(fromFile.stderr)")
    #expect(fromFile.stderr.isEmpty)
    let fromEnvironment = try tipipe(["token", "--device-id", "d"], environment: ["TIPIPE_SECRET": "from-env"])
    #expect(fromEnvironment.status == 0 && verifies(fromEnvironment.stdout, with: "from-env"))
    #expect(fromEnvironment.stderr.isEmpty)
    // The file wins over the environment; the command line is warned about (and wins over the environment).
    let both = try tipipe(
      ["token", "--device-id", "d", "--secret-file", file.path], environment: ["TIPIPE_SECRET": "from-env"])
    #expect(verifies(both.stdout, with: "from-file"))
    let visible = try tipipe(["token", "--device-id", "d", "--secret", "typed"], environment: ["TIPIPE_SECRET": "e"])
    #expect(visible.status == 0 && verifies(visible.stdout, with: "typed"))
    // A script's standard error stays as it was; a person at a terminal (script(1) gives it one) is warned.
    #expect(visible.stderr.isEmpty)
    let executable = try tipipeExecutable().path
    let atTerminal = try run(
      "/usr/bin/script", ["-qec", "\(executable) token --device-id d --secret typed", "/dev/null"])
    #expect(
      atTerminal.contains("warning: --secret on the command line is visible to every local user"), "\(atTerminal)")
    // Both forms at once, an empty file, a directory, a FIFO-like device: usage errors, nothing printed.
    let empty = directory.url.appendingPathComponent("empty")
    try Data().write(to: empty)
    let fifo = directory.url.appendingPathComponent("fifo")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    let large = directory.url.appendingPathComponent("large")
    try Data(repeating: 0x61, count: 70_000).write(to: large)
    for arguments in [
      ["--secret", "x", "--secret-file", file.path], ["--secret-file", empty.path],
      ["--secret-file", directory.url.path], ["--secret-file", "/dev/zero"], ["--secret-file", fifo.path],
      ["--secret-file", large.path],
      ["--secret-file", directory.url.appendingPathComponent("missing").path],
    ] {
      let refused = try tipipe(["token", "--device-id", "d"] + arguments)
      #expect(refused.status == 2 && refused.stdout.isEmpty, "\(arguments): \(refused.stderr)")
    }
  }

  @Test("--token-file and TIPIPE_TOKEN reach the listing; a wrong one is refused by the server")
  func tokenSources() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: directory.url)
    let server = try ServeProcess(root: directory.url)
    let device = try RecordingIndex.load(library: directory.url).deviceId
    let signed = CloudToken(deviceId: device, expires: Int64(Date().timeIntervalSince1970) + 3600)
      .signed(secret: "cli-secret")
    let token = directory.url.appendingPathComponent("token")
    try "\(signed)\n".write(to: token, atomically: true, encoding: .utf8)
    let range = ["--start", "\(recordingStart)", "--end", "\(recordingStart + 6000)"]
    let fromFile = try tipipe(["list", "--endpoint", server.endpoint, "--token-file", token.path] + range)
    #expect(fromFile.status == 0 && fromFile.stderr.isEmpty, "\(fromFile.stderr)")
    #expect(fromFile.stdout.contains("\(recordingStart)"))
    let fromEnvironment = try tipipe(
      ["list", "--endpoint", server.endpoint] + range, environment: ["TIPIPE_TOKEN": signed])
    #expect(fromEnvironment.status == 0 && fromEnvironment.stdout == fromFile.stdout, "\(fromEnvironment.stderr)")
    let wrong = try tipipe(
      ["list", "--endpoint", server.endpoint] + range, environment: ["TIPIPE_TOKEN": "v1.\(device).1.00"])
    #expect(wrong.status == 1 && wrong.stderr.contains("error: "), "\(wrong.stderr)")
    #expect(try server.stop() == 0)
  }

  @Test("serve refuses an address other than loopback with the public secret, unless --insecure")
  func publicServerWithThePublicSecret() throws {
    let directory = try TemporaryDirectory()
    let refused = try tipipe(["serve", "--root", directory.url.path, "--host", "0.0.0.0", "--port", "0"])
    #expect(refused.status == 2)
    #expect(refused.stderr.contains("public default secret"), "\(refused.stderr)")
    #expect(refused.stdout.isEmpty)
  }

  @Test("serve takes --object-host HOST or HOST:PORT and nothing else")
  func objectHostFlag() throws {
    let directory = try TemporaryDirectory()
    for bad in ["", "a/b", "user@host", "http://x", "host:port:x"] {
      let refused = try tipipe(["serve", "--root", directory.url.path, "--port", "0", "--object-host", bad])
      #expect(refused.status == 2, "\(bad): \(refused.stderr)")
      #expect(refused.stderr.contains("--object-host"), "\(bad): \(refused.stderr)")
    }
  }
}
