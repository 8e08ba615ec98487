import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// Index entries that name absolute URLs (issue 24): served only on the hosts the operator listed, and
/// a host whose answers never start ends a request, and an export, in bounded time.
@Suite struct ObjectHostTests {
  /// A library whose index is `origin`'s with every object at `url(segment)`.
  private func pointing(
    at origin: ServedLibrary, _ url: (RecordingIndex.Segment) -> String
  ) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory("tipipe-hosts")
    let index = try RecordingIndex.load(library: origin.library)
    let moved = index.segments.map { segment in
      var segment = segment
      segment.url = url(segment)
      return segment
    }
    try RecordingIndex(deviceId: index.deviceId, segments: moved).encoded().write(
      to: directory.url.appendingPathComponent("index.json"))
    return directory
  }

  /// `origin`'s own presigned URL of `segment`, valid for an hour.
  private func signedURL(_ origin: ServedLibrary, _ segment: RecordingIndex.Segment) -> String {
    let expires = now() + 3600
    let signature = HMACSHA256.hex("\(segment.id).\(expires)", key: secret)
    return "\(origin.server.endpoint)/v1/objects/\(segment.id)?expires=\(expires)&sig=\(signature)"
  }

  @Test func anIndexMayNameObjectsOnAListedHost() throws {
    let scratch = try TemporaryDirectory()
    let origin = try ServedLibrary(seconds: 6)
    let directory = try pointing(at: origin) { signedURL(origin, $0) }
    let front = try ServedLibrary(directory: directory, objectHosts: ["127.0.0.1:\(origin.server.port)"])
    let viaFront = try export(
      CloudSegmentSource(service: front.service, range: span(0, 6000), token: front.token), range: span(0, 6000),
      to: scratch.url.appendingPathComponent("front.mp4"))
    _ = try export(
      CloudSegmentSource(service: origin.service, range: span(0, 6000), token: origin.token),
      range: span(0, 6000), to: scratch.url.appendingPathComponent("direct.mp4"))
    #expect(viaFront.code == .ok && viaFront.report.complete, "\(viaFront.message ?? "")")
    #expect(
      try Data(contentsOf: scratch.url.appendingPathComponent("front.mp4"))
        == Data(contentsOf: scratch.url.appendingPathComponent("direct.mp4")))
    // The front listed; the origin served every object (the front served none).
    #expect(front.requests("GET /v1/objects/").isEmpty)
    #expect(front.requests("GET /v1/recordings").count >= 1)
    #expect(origin.requests("GET /v1/objects/").count >= 4, "\(origin.log.lines)")
  }

  @Test func anAbsoluteURLOnAnotherHostIsNotServed() throws {
    let origin = try ServedLibrary(seconds: 6)
    // Listed as 127.0.0.1 without the port: only the default port would match.
    let directory = try pointing(at: origin) { signedURL(origin, $0) }
    let front = try ServedLibrary(directory: directory, objectHosts: ["127.0.0.1"])
    let range = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000)
    let listed = try blockingWait { front.service.listSegments(in: range, token: front.token, completion: $0) }.get()
    #expect(!listed.segments.isEmpty)
    for segment in listed.segments {
      #expect(segment.url.hasPrefix(front.server.endpoint), "\(segment.url)")
      let status = try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", segment.url])
      #expect(status == "500")
    }
    let notes = front.log.lines.filter { $0.hasPrefix("index entry ") }
    #expect(notes.count == listed.segments.count)
    #expect(notes.allSatisfy { $0.contains("127.0.0.1:\(origin.server.port) is not one of the object hosts") })
  }

  @Test func headersThatNeverComeEndARequestAfterItsAttempts() throws {
    let hole = try BlackHole()
    var policy = TransferPolicy()
    policy.connectTimeout = .seconds(1)
    policy.stallTimeout = .seconds(1)
    policy.backoff = .milliseconds(5)
    policy.maximumBackoff = .milliseconds(10)
    let service = CloudService(endpoint: URL(string: "http://127.0.0.1:\(hole.port)")!, policy: policy)
    let range = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000)
    let listed = try blockingWait { service.listSegments(in: range, token: "t", completion: $0) }
    guard case .failure(let error) = listed else {
      Issue.record("a host that never answers listed \(listed)")
      return
    }
    #expect(error.kind == .serviceUnavailable, "\(error)")
    // One connection per attempt: the client gives up after its attempts without progress instead of
    // reconnecting for as long as the deadline allows.
    let connections = hole.connections(atLeast: policy.attemptsWithoutProgress)
    #expect(connections == policy.attemptsWithoutProgress, "\(connections) connections")
  }

  @Test func anObjectHostWhoseHeadersNeverComeEndsTheExportWithinItsBudget() throws {
    let scratch = try TemporaryDirectory()
    let hole = try BlackHole()
    let origin = try ServedLibrary(seconds: 36)
    let directory = try pointing(at: origin) { "http://127.0.0.1:\(hole.port)/o/\($0.id)" }
    let front = try ServedLibrary(directory: directory, objectHosts: ["127.0.0.1:\(hole.port)"])
    let output = scratch.url.appendingPathComponent("hole.mp4")
    // The transfers' own stall timeout (60 s in these tests) would keep each object for minutes.
    let result = try export(
      CloudSegmentSource(
        service: front.service, range: span(0, 36_000), token: front.token, stallBudget: .seconds(2)),
      range: span(0, 36_000), to: output)
    // The first stall gives the objects in flight up as gaps, the second (nothing received between) the
    // operation: the cloud does not answer (6123).
    #expect(result.code == .cloudStorageUnavailable, "\(result.message ?? "")")
    #expect(result.report.termination == .failed && result.file == nil)
    #expect(!FileManager.default.fileExists(atPath: output.path))
    #expect(hole.connections >= 1)
  }
}
