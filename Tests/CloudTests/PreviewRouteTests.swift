import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// The reference server's scrub previews (`GET /thumbnails`, `GET /thumbnails.jpg`; issue 26) against curl,
/// the independent client: the index and the sprite it names, the same bytes as `tipipe thumbnails` makes
/// of the same library, and every refusal a hostile client meets.
@Suite struct PreviewRouteTests {
  /// GETs `url` with curl (`headers` added): the status, the content type and the body.
  private func get(_ url: String, headers: [String] = []) throws -> (status: Int, type: String, body: Data) {
    let scratch = try TemporaryDirectory("preview-get")
    let body = scratch.url.appendingPathComponent("body")
    var arguments = ["-s", "-g", "-o", body.path, "-w", "%{http_code} %{content_type}"]
    for header in headers { arguments += ["-H", header] }
    let written = try run("/usr/bin/curl", arguments + [url]).split(separator: " ", maxSplits: 1)
    return (
      Int(written.first ?? "") ?? -1, written.count > 1 ? String(written[1]) : "",
      (try? Data(contentsOf: body)) ?? Data()
    )
  }

  /// A library of 12 s (3-second objects, a keyframe every 2 s), encrypted: the server decrypts it itself.
  private func served(now: (@Sendable () -> Int64)? = nil) throws -> (ServedLibrary, Int64) {
    let directory = try TemporaryDirectory("tipipe-previews")
    var options = smallOptions(seconds: 12)
    options.encrypt = true
    try LibrarySynthesizer(options: options).write(to: directory.url)
    return (try ServedLibrary(directory: directory, now: now), options.startMilliseconds)
  }

  @Test func theIndexNamesAPresignedSpriteThatIsWhatTheCommandMakes() throws {
    let (served, start) = try served()
    let query = "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=2000"
    let index = try get(
      "\(served.server.endpoint)/thumbnails?\(query)", headers: ["Authorization: Bearer \(served.token)"])
    #expect(index.status == 200 && index.type.hasPrefix("text/vtt"), "\(index.status) \(index.type)")
    let text = String(decoding: index.body, as: UTF8.self)
    let cues = text.components(separatedBy: "\n\n").dropFirst().map { $0.split(separator: "\n").map(String.init) }
    #expect(text.hasPrefix("WEBVTT\n") && cues.count == 6, "\(text)")
    #expect(cues.first?.first == "00:00:00.000 --> 00:00:02.000" && cues.last?.first == "00:00:10.000 --> 00:00:12.000")
    // Every cue names the same sprite, presigned, and its own tile.
    let urls = Set(cues.compactMap { $0.last?.components(separatedBy: "#xywh=").first })
    let sprite = try #require(urls.first, "\(text)")
    #expect(urls.count == 1 && sprite.hasPrefix("thumbnails.jpg?") && sprite.contains("&sig="), "\(urls)")
    #expect(cues.last?.last?.hasSuffix("#xywh=800,0,160,120") == true, "\(cues.last ?? [])")

    // The sprite loads without the token (as an <img> would); it is the JPEG the command makes of the
    // same library (the command's sprite is judged against an export by ThumbnailsCommandTests).
    let image = try get("\(served.server.endpoint)/\(sprite)")
    #expect(image.status == 200 && image.type == "image/jpeg", "\(image.status) \(image.type)")
    let out = try TemporaryDirectory("preview-command")
    let made = try tipipe([
      "thumbnails", "--endpoint", "file://" + served.library.path, "--start", "\(start)", "--end",
      "\(start + 12_000)", "--video-channel", "0", "--every", "2", "--out", out.url.path,
    ])
    try #require(made.status == 0, "\(made.stderr)")
    #expect(image.body == (try Data(contentsOf: out.url.appendingPathComponent("thumbnails.jpg"))))
    let probe = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
        out.url.appendingPathComponent(
          "thumbnails.jpg"
        ).path,
      ])
    #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "960,120", "\(probe)")

    // The same sprite to a bearer token; the pair cost one run (the second is the kept sheet).
    let again = try get(
      "\(served.server.endpoint)/thumbnails.jpg?\(query)", headers: ["Authorization: Bearer \(served.token)"])
    #expect(again.status == 200 && again.body == image.body)
    // The log names paths, never a token or a signature.
    let lines = served.log.lines.filter { $0.contains("/thumbnails") }
    #expect(lines.count == 3 && !lines.contains { $0.contains("sig") || $0.contains(served.token) }, "\(lines)")
  }

  @Test func aHostileClientIsRefusedWithTheAPIsErrors() throws {
    let clock = ManualSeconds(now())
    let (served, start) = try served(now: { clock.value })
    let endpoint = served.server.endpoint
    let bearer = ["Authorization: Bearer \(served.token)"]
    let query = "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=3000"
    func error(_ answer: (status: Int, type: String, body: Data)) -> String {
      ((try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any])?["error"] as? String ?? ""
    }
    // No token, a token of another device, an expired one.
    let none = try get("\(endpoint)/thumbnails?\(query)")
    #expect(none.status == 401 && error(none) == "token_invalid")
    let other = CloudToken(deviceId: "another", expires: now() + 3600).signed(secret: secret)
    let foreign = try get("\(endpoint)/thumbnails?\(query)", headers: ["Authorization: Bearer \(other)"])
    #expect(foreign.status == 403 && error(foreign) == "permission_denied")
    // Arguments out of their bounds: 400, before any work.
    for bad in [
      "start_ms=\(start)&end_ms=\(start)&channel=0&every_ms=1000",
      "start_ms=\(start)&end_ms=\(start + 864_000_001)&channel=0&every_ms=1000000",
      "start_ms=\(Int64.min)&end_ms=\(Int64.max)&channel=0&every_ms=1000",
      "start_ms=\(start)&end_ms=\(start + 12_000)&channel=256&every_ms=1000",
      "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=99",
      "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=1000&width=7",
      "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=1000&columns=0",
      "start_ms=\(start)&end_ms=\(start + 86_400_000)&channel=0&every_ms=100",
      "start_ms=x&end_ms=\(start + 12_000)&channel=0&every_ms=1000",
      // Times no clock holds, and an interval that overflows when made microseconds: refused, not a trap.
      "start_ms=-5000000000000000&end_ms=-4999999999999000&channel=0&every_ms=100",
      "start_ms=\(start)&end_ms=\(start + 12_000)&channel=0&every_ms=\(Int64.max)",
    ] {
      let answer = try get("\(endpoint)/thumbnails?\(bad)", headers: bearer)
      #expect(answer.status == 400 && error(answer) == "invalid_argument", "\(bad): \(answer.status)")
    }
    // Nothing recorded there, or no such channel: 404.
    let empty = try get(
      "\(endpoint)/thumbnails?start_ms=\(start - 60_000)&end_ms=\(start - 1)&channel=0&every_ms=1000", headers: bearer)
    #expect(empty.status == 404 && error(empty) == "not_found")
    let channel = try get(
      "\(endpoint)/thumbnails?\(query.replacingOccurrences(of: "channel=0", with: "channel=9"))", headers: bearer)
    #expect(channel.status == 404)
    // The sprite: a tampered query, a bad signature, an expired URL.
    let index = String(decoding: try get("\(endpoint)/thumbnails?\(query)", headers: bearer).body, as: UTF8.self)
    let sprite = try #require(
      index.split(separator: "\n").first { $0.hasPrefix("thumbnails.jpg?") }?.components(separatedBy: "#").first)
    #expect(try get("\(endpoint)/\(sprite)").status == 200)
    let tampered = try get("\(endpoint)/\(sprite.replacingOccurrences(of: "width=160", with: "width=320"))")
    #expect(tampered.status == 403 && error(tampered) == "signature_invalid")
    let forged = try get("\(endpoint)/\(sprite.replacingOccurrences(of: "sig=", with: "sig=0"))")
    #expect(forged.status == 403 && error(forged) == "signature_invalid")
    clock.value += 3_601
    let expired = try get("\(endpoint)/\(sprite)")
    #expect(expired.status == 403 && error(expired) == "signature_expired")
  }
}

/// A clock of Unix seconds a test moves.
final class ManualSeconds: @unchecked Sendable {
  private let lock = NSLock()
  private var seconds: Int64
  init(_ seconds: Int64) { self.seconds = seconds }
  var value: Int64 {
    get { lock.withLock { seconds } }
    set { lock.withLock { seconds = newValue } }
  }
}
