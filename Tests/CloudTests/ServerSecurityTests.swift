import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// The reference server as an attacker (or a careless operator) meets it (issue 24): request lines that
/// would forge log lines, and index entries or symlinks that point out of the library.
@Suite struct ServerSecurityTests {
  /// The listing's presigned URLs, by object id.
  private func objectURLs(_ served: ServedLibrary) throws -> [String: String] {
    let range = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 60_000)
    let listed = try blockingWait { served.service.listSegments(in: range, token: served.token, completion: $0) }.get()
    return Dictionary(uniqueKeysWithValues: listed.segments.map { ($0.id, $0.url) })
  }

  /// The status curl got for `url` (its body discarded).
  private func status(_ url: String) throws -> Int {
    Int(try run("/usr/bin/curl", ["-s", "-g", "-o", "/dev/null", "--path-as-is", "-w", "%{http_code}", url])) ?? -1
  }

  @Test func aRequestLineCannotForgeALogLineOrDriveATerminal() throws {
    let served = try ServedLibrary(seconds: 3)
    for path in ["/v1/objects/x%0aGET%20/v1/recordings%20200%200", "/v1/x%1b[31mred%1b[0m", "/v1/%0d%e2%80%a8%c2%85"] {
      #expect(try status("\(served.server.endpoint)\(path)") >= 400)
    }
    let lines = served.log.lines
    #expect(lines.count == 3, "\(lines)")
    for line in lines {
      #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(line.debugDescription)")
      #expect(!line.contains("\u{2028}"))
    }
    #expect(lines[0].contains("x\\nGET /v1/recordings 200 0"))
    #expect(lines[1].contains("\\u{1b}[31m"))
  }

  @Test func indexEntriesAndSymlinksOutOfTheLibraryAreNotServed() throws {
    let directory = try TemporaryDirectory("tipipe-security")
    try LibrarySynthesizer(options: smallOptions(seconds: 9)).write(to: directory.url)
    // A file outside the library a signed URL must not reach.
    let outside = try TemporaryDirectory("tipipe-outside")
    let secretFile = outside.url.appendingPathComponent("secret.txt")
    try Data("not for clients".utf8).write(to: secretFile)
    var index = try RecordingIndex.load(library: directory.url)
    var segments = index.segments.sorted { $0.startMs < $1.startMs }
    // Object 0: a symlink to the outside file; object 1: an entry naming ../ ; object 2: served as usual.
    let first = segments[0].fileURL(in: directory.url)
    try FileManager.default.removeItem(at: first)
    try FileManager.default.createSymbolicLink(at: first, withDestinationURL: secretFile)
    segments[1].url = "objects/../../\(outside.url.lastPathComponent)/secret.txt"
    index = RecordingIndex(deviceId: index.deviceId, segments: segments)
    try index.encoded().write(to: directory.url.appendingPathComponent("index.json"))
    let served = try ServedLibrary(directory: directory)
    let urls = try objectURLs(served)
    #expect(try status(try #require(urls[segments[0].id])) == 500)
    #expect(try status(try #require(urls[segments[1].id])) == 500)
    #expect(try status(try #require(urls[segments[2].id])) == 200)
    // The operator is told which entry is bad, and why.
    let notes = served.log.lines.filter { $0.hasPrefix("index entry ") }
    #expect(notes.count == 2, "\(served.log.lines)")
    #expect(notes.contains { $0.contains(segments[0].id) && $0.contains("outside") })
    #expect(notes.contains { $0.contains(segments[1].id) && $0.contains("relative name under objects/") })
  }
}
