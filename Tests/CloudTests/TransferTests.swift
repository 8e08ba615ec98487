import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Retries, `Range` resumption, cancellation, windowed listing and re-listing against the real server.
@Suite struct TransferTests {
  /// The export of `range` from the local library, the reference the cloud exports must equal byte for byte.
  private func localExport(_ served: ServedLibrary, _ range: MediaRange, _ directory: TemporaryDirectory) throws
    -> Data
  {
    let output = directory.url.appendingPathComponent("local.mp4")
    let result = try export(
      CloudSegmentSource(directory: served.library, range: range, prefetchBytes: 1 << 20), range: range, to: output)
    #expect(result.code == .ok)
    return try Data(contentsOf: output)
  }

  private func cloudExport(
    _ served: ServedLibrary, _ range: MediaRange, _ directory: TemporaryDirectory, window: Int64 = 3_600_000,
    token: String? = nil
  ) throws -> (ExportResult, Data?) {
    let output = directory.url.appendingPathComponent("cloud-\(UUID().uuidString).mp4")
    let source = CloudSegmentSource(
      service: served.service, range: range, token: token ?? served.token, prefetchBytes: 1 << 20,
      window: .microseconds(window * 1000))
    let result = try export(source, range: range, to: output)
    return (result, result.file.flatMap { try? Data(contentsOf: $0) })
  }

  enum Fault: String, CaseIterable, Sendable {
    case serverError, tooManyRequests, reset, truncated, random

    var faults: ServerFaults {
      var faults = ServerFaults()
      switch self {
      case .serverError: faults.failFirst = 2
      case .tooManyRequests:
        faults.failFirst = 2
        faults.failStatus = 429
      case .reset: faults.resetFirst = 2
      case .truncated: faults.truncateFirst = 5
      case .random:
        faults.failRate = 0.3
        faults.truncateRate = 0.3
      }
      return faults
    }
  }

  @Test(arguments: Fault.allCases)
  func retriesAndResumeGiveByteIdenticalExports(_ fault: Fault) throws {
    let name = fault.rawValue
    let faults = fault.faults
    let served = try ServedLibrary(seconds: 12, faults: faults)
    let directory = try TemporaryDirectory()
    let range = span(1_000, 11_000)
    let reference = try localExport(served, range, directory)
    let (result, bytes) = try cloudExport(served, range, directory)
    #expect(result.code == .ok, "\(name): \(result.message ?? "")")
    #expect(result.report.complete)
    #expect(bytes == reference, "\(name): the cloud export differs from the local one")
    if fault == .truncated {
      // Every object came in pieces: each retry asked for the rest with Range (206).
      #expect(served.requests("GET /v1/objects/").contains { $0.contains(" 206 ") })
      #expect(served.server.objectRequests().values.allSatisfy { $0 == 6 })
    }
  }

  @Test func progressResetsTheAttemptCount() async throws {
    // Eight truncated answers in a row, each bringing new bytes: more than three attempts, still a success.
    var faults = ServerFaults()
    faults.truncateFirst = 8
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await wait { served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0) }
      .get().segments[0]
    guard case .fetched(let data, let verified) = await wait({ served.service.fetchObject(object, completion: $0) })
    else {
      Issue.record("a transfer that kept making progress gave up")
      return
    }
    // Hashed across the resumed pieces, and found to match.
    #expect(verified)
    #expect(data.count == object.size)
    #expect(SHA256Digest.hexHash(data) == object.sha256)
    #expect(served.server.objectRequests()[object.id] == 9)
  }

  @Test func aServerThatIgnoresRangesIsReadFromTheStartAgain() async throws {
    // Two answers cut halfway, each time the whole body again (200): the third is whole.
    var faults = ServerFaults()
    faults.ignoresRanges = true
    faults.truncateFirst = 2
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await wait { served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0) }
      .get().segments[0]
    guard case .fetched(let data, let verified) = await wait({ served.service.fetchObject(object, completion: $0) })
    else {
      Issue.record("the third, whole answer was not taken")
      return
    }
    #expect(verified && data.count == object.size && SHA256Digest.hexHash(data) == object.sha256)
    #expect(served.server.objectRequests()[object.id] == 3)
    #expect(!served.requests("GET /v1/objects/").contains { $0.contains(" 206 ") })
  }

  @Test func aServerThatIgnoresRangesAndCutsEveryAnswerIsGivenUpAfterThreeFruitlessAttempts() async throws {
    // Every answer is the first half again: bytes come, none new. (It was retried until the 120 s deadline.)
    var faults = ServerFaults()
    faults.ignoresRanges = true
    faults.truncateRate = 1
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await wait { served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0) }
      .get().segments[0]
    guard case .failed(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("a body that never completes was taken")
      return
    }
    #expect(error.gapReason == .downloadFailed, "\(error)")
    // The first answer brought bytes; the three after it brought none new.
    #expect(served.server.objectRequests()[object.id] == 4)
  }

  @Test func stoppingTheServerEndsAStalledAnswerAtOnce() throws {
    // The stalled object sends 1000 bytes, then nothing for 10 minutes: a server stopping meanwhile does
    // not wait for that (its shutdown waits for every connection).
    var faults = ServerFaults()
    faults.stalledObjects = [String(recordingStart)]
    faults.stallSeconds = 600
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try blockingWait {
      served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0)
    }
    .get().segments[0]
    #expect(object.id == String(recordingStart))
    let request = served.service.fetchObject(object) { _ in }
    defer { request.cancel() }
    try waitUntil("the stalled answer began") { (served.server.objectRequests()[object.id] ?? 0) >= 1 }
    let stopped = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      served.server.stop()
      stopped.signal()
    }
    // Well within the stall's 10 minutes (a deadline, not a timing).
    try stopped.wait(for: "the server's stop (it waited for the stall?)")
  }

  @Test func cancellingASlowTransferEndsItBeforeItsBodyArrives() throws {
    var faults = ServerFaults()
    // About 90 KB at 2 KB/s: the transfer would take most of a minute.
    faults.bytesPerSecond = 2_000
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try blockingWait {
      served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0)
    }
    .get().segments[0]
    let finished = DispatchSemaphore(value: 0)
    let outcome = Locked<ObjectFetch?>(nil)
    let request = served.service.fetchObject(object) { fetch in
      outcome.withLock { $0 = fetch }
      finished.signal()
    }
    // The answer's headers are out and its body is trickling: the transfer is under way. (A synchronous
    // test, so that nothing here waits for a busy cooperative pool.)
    try served.log.waitForLine(startingWith: "GET /v1/objects/")
    request.cancel()
    try finished.wait(for: "the cancelled transfer's completion")
    let fetch = try #require(outcome.withLock { $0 })
    guard case .failed(let error) = fetch else {
      Issue.record("a cancelled transfer delivered \(fetch)")
      return
    }
    #expect(error.kind == .cancelled)
    // It ended with the body still on its way (not by receiving it all), and nothing more arrives.
    let received = request.bytesReceived ?? 0
    #expect(received < Int(object.size), "\(received) of \(object.size) bytes")
    #expect(served.requests("GET /v1/objects/").count == 1)
  }

  @Test func cancellingAnExportDuringASlowTransferEndsIt() throws {
    var faults = ServerFaults()
    // About 90 KB an object at 2 KB/s: the export would take minutes, so the cancel cannot come after
    // its end however late this thread wakes.
    faults.bytesPerSecond = 2_000
    let served = try ServedLibrary(seconds: 6, faults: faults)
    let directory = try TemporaryDirectory()
    let range = span(0, 6000)
    let output = directory.url.appendingPathComponent("cancelled.mp4")
    let job = try ExportJob(
      request: .init(
        range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: nil, output: output),
      source: CloudSegmentSource(service: served.service, range: range, token: served.token),
      completion: { _ in })
    try served.log.waitForLine(startingWith: "GET /v1/objects/")
    job.cancel()
    let result = try #require(job.waitForResult(timeout: testDeadline), "the cancelled export's result")
    #expect(result.code == .cancelled)
    #expect(result.file == nil)
    #expect(!FileManager.default.fileExists(atPath: output.path))
    #expect(result.report.termination == .cancelled)
  }

  @Test func listsInWindowsAsItGoes() throws {
    let served = try ServedLibrary(seconds: 12)
    let directory = try TemporaryDirectory()
    let range = span(0, 12_000)
    let reference = try localExport(served, range, directory)
    let (result, bytes) = try cloudExport(served, range, directory, window: 3000)
    #expect(result.code == .ok)
    #expect(bytes == reference)
    // Four windows of 3 s, each listed once, and one look back for an object abutting the first.
    #expect(served.requests("GET /v1/recordings").count == 4 + 1)
  }

  @Test func relistsAnObjectWhoseURLExpired() throws {
    var faults = ServerFaults()
    faults.expireSignaturesFirst = 1
    let served = try ServedLibrary(seconds: 9, faults: faults)
    let directory = try TemporaryDirectory()
    let range = span(0, 9000)
    let reference = try localExport(served, range, directory)
    let (result, bytes) = try cloudExport(served, range, directory)
    #expect(result.code == .ok)
    #expect(result.report.complete)
    #expect(bytes == reference)
    // One listing for the range, one look back, one re-listing per object.
    #expect(served.requests("GET /v1/recordings").count == 1 + 1 + 3)
  }

  @Test func anObjectRefusedAfterRelistingIsADownloadFailedGap() throws {
    var faults = ServerFaults()
    faults.expireSignaturesFirst = 2
    let served = try ServedLibrary(seconds: 9, faults: faults)
    let directory = try TemporaryDirectory()
    let (result, _) = try cloudExport(served, span(0, 9000), directory)
    #expect(result.code == .noRecordableMedia)
    #expect(result.report.gaps.contains { $0.reasons.contains(.downloadFailed) })
  }

  @Test func aTokenThatExpiresMidExportInterruptsIt() throws {
    // Listing windows of 3 s; the token runs out after two listings.
    var faults = ServerFaults()
    faults.tokenRequests = 2
    let served = try ServedLibrary(seconds: 12, faults: faults)
    let directory = try TemporaryDirectory()
    let (result, bytes) = try cloudExport(served, span(0, 12_000), directory, window: 3000)
    #expect(result.code == .ok)
    #expect(result.report.termination == .interrupted)
    #expect(result.report.cause == TiErrorCode.tokenExpired.rawValue)
    #expect(!result.report.unprocessedRanges.isEmpty)
    #expect(result.report.coveredDurationMs > 0)
    #expect(bytes != nil)
    let last = result.report.unprocessedRanges.last!
    #expect(last.endMs == recordingStart + 12_000)
  }

  @Test func aTokenExpiredFromTheStartFailsTheExport() throws {
    let served = try ServedLibrary(seconds: 3)
    let directory = try TemporaryDirectory()
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 1).signed(secret: secret)
    let (result, bytes) = try cloudExport(served, span(0, 3000), directory, token: expired)
    #expect(result.code == .tokenExpired)
    #expect(result.report.termination == .failed)
    #expect(bytes == nil)
  }

  @Test func theServerAnswersRanges() async throws {
    let served = try ServedLibrary(seconds: 3)
    let object = try await wait { served.service.listSegments(in: span(0, 3000), token: served.token, completion: $0) }
      .get().segments[0]
    let whole = try Data(
      contentsOf: try RecordingIndex.load(library: served.library).segments[0].fileURL(in: served.library))
    func get(_ range: String?) async throws -> (Int, Data, String?) {
      var request = URLRequest(url: URL(string: object.url)!)
      if let range { request.setValue(range, forHTTPHeaderField: "Range") }
      let (data, response) = try await URLSession.shared.data(for: request)
      let http = response as! HTTPURLResponse
      return (http.statusCode, data, http.value(forHTTPHeaderField: "Content-Range"))
    }
    let (status, data, _) = try await get(nil)
    #expect(status == 200 && data == whole)
    let (partial, tail, contentRange) = try await get("bytes=100-")
    #expect(partial == 206 && tail == whole.dropFirst(100))
    #expect(contentRange == "bytes 100-\(whole.count - 1)/\(whole.count)")
    let (middle, slice, _) = try await get("bytes=10-19")
    #expect(middle == 206 && slice == whole[10..<20])
    // RFC 7233: a suffix is the last N bytes (all of them when N is larger), a last position past the end
    // (even past what 64 bits hold) is the end.
    for (range, expected) in [
      ("bytes=-1", whole.suffix(1)), ("bytes=-100", whole.suffix(100)),
      ("bytes=-\(whole.count + 5)", whole[...]), ("bytes=0-\(whole.count + 5)", whole[...]),
      ("bytes=2-99999999999999999999", whole.dropFirst(2)),
    ] {
      let (code, bytes, _) = try await get(range)
      #expect(code == 206 && bytes == Data(expected), "\(range): \(code), \(bytes.count) bytes")
    }
    for bad in ["bytes=\(whole.count)-", "bytes=5-2", "bytes=x-", "bytes=-0", "bytes=-", "bytes=+1-2"] {
      let (refused, _, unsatisfied) = try await get(bad)
      #expect(refused == 416, "\(bad)")
      #expect(unsatisfied == "bytes */\(whole.count)")
    }
    // RFC 9110 §14.2: an unknown range unit is ignored; several ranges are too (one body, not in parts).
    for ignored in ["items=0-", "bytes=0-1,5-6"] {
      let (code, bytes, _) = try await get(ignored)
      #expect(code == 200 && bytes == whole, "\(ignored): \(code), \(bytes.count) bytes")
    }
  }

  @Test func theLogHasNoTokensOrSignatures() async throws {
    let served = try ServedLibrary(seconds: 3)
    let token = served.token
    let object = try await wait { served.service.listSegments(in: span(0, 3000), token: token, completion: $0) }
      .get().segments[0]
    _ = await wait { served.service.fetchObject(object, completion: $0) }
    let lines = served.log.lines
    #expect(lines.count == 2)
    let signature = String(object.url.split(separator: "=").last!)
    #expect(!lines.contains { $0.contains(token) || $0.contains(signature) || $0.contains("sig") })
  }
}
