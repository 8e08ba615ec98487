import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// Every row of the error table of `spec/cloud-api.md`, against the reference server on loopback: the
/// cloud client reports each answer as an engine kind, and the SDK's `TiError` gives it the table's code.
@Suite struct ErrorTableTests {
  let window = span(0, 12_000)

  private func listing(_ served: ServedLibrary, token: String, range: MediaRange? = nil) async -> Result<
    RecordingIndex, TiError
  > {
    await wait { served.service.listSegments(in: range ?? window, token: token, completion: $0) }.mapError(TiError.init)
  }

  @Test func listing400IsInvalidArgument() async throws {
    let served = try ServedLibrary(seconds: 3)
    // Eleven days: the server refuses it (the queries refuse it before asking; this asks directly).
    let eleven = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 950_400_000)
    let result = await listing(served, token: served.token, range: eleven)
    #expect(result.failure?.code == .invalidArgument)
  }

  @Test func listing401ExpiredIsTokenExpired() async throws {
    let served = try ServedLibrary(seconds: 3)
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 10).signed(secret: secret)
    #expect(await listing(served, token: expired).failure?.code == .tokenExpired)
  }

  @Test func listing401InvalidIsPermissionDenied() async throws {
    let served = try ServedLibrary(seconds: 3)
    let forged = CloudToken(deviceId: served.deviceId, expires: now() + 3600).signed(secret: "another secret")
    #expect(await listing(served, token: forged).failure?.code == .permissionDenied)
    #expect(await listing(served, token: "garbage").failure?.code == .permissionDenied)
    #expect(await listing(served, token: "").failure?.code == .permissionDenied)
  }

  @Test func listing403OtherDeviceIsPermissionDenied() async throws {
    let served = try ServedLibrary(seconds: 3)
    let other = CloudToken(deviceId: "another-device", expires: now() + 3600).signed(secret: secret)
    #expect(await listing(served, token: other).failure?.code == .permissionDenied)
  }

  @Test(arguments: [429, 500, 503])
  func listingOverloadIsCloudStorageUnavailable(status: Int) async throws {
    var faults = ServerFaults()
    faults.listingStatus = status
    let served = try ServedLibrary(seconds: 3, faults: faults)
    #expect(await listing(served, token: served.token).failure?.code == .cloudStorageUnavailable)
    // Retried: three attempts without progress, then the answer.
    #expect(served.requests("GET /v1/recordings").count == 3)
  }

  @Test func malformedListingIsCloudStorageUnavailable() async throws {
    var faults = ServerFaults()
    faults.malformedListing = true
    let served = try ServedLibrary(seconds: 3, faults: faults)
    #expect(await listing(served, token: served.token).failure?.code == .cloudStorageUnavailable)
  }

  @Test func object404IsRecordingNotFoundGap() async throws {
    let served = try ServedLibrary(seconds: 6)
    let index = try await listing(served, token: served.token).get()
    let object = index.segments[1]
    let stored = try RecordingIndex.load(library: served.library).segments.first { $0.id == object.id }!
    try FileManager.default.removeItem(at: stored.fileURL(in: served.library))
    guard case .failed(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("a missing object was fetched")
      return
    }
    #expect(TiError(error).code == .recordingNotFound)
    #expect(error.gapReason == .notFound)
  }

  @Test func object403IsRefusedForRelisting() async throws {
    var faults = ServerFaults()
    faults.expireSignaturesFirst = 1
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await listing(served, token: served.token).get().segments[0]
    guard case .urlRefused(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("an expired URL was not refused")
      return
    }
    #expect(TiError(error).code == .recordingDownloadFailed)
    // A forged signature is refused the same way.
    var forged = object
    forged.url = object.url.replacingOccurrences(of: "sig=", with: "sig=00")
    guard case .urlRefused = await wait({ served.service.fetchObject(forged, completion: $0) }) else {
      Issue.record("a forged URL was not refused")
      return
    }
  }

  @Test(arguments: [500, 503, 429])
  func objectServerErrorsAfterRetriesAreDownloadFailed(status: Int) async throws {
    var faults = ServerFaults()
    faults.failFirst = 3
    faults.failStatus = status
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await listing(served, token: served.token).get().segments[0]
    guard case .failed(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("three failures in a row did not fail the fetch")
      return
    }
    #expect(TiError(error).code == .recordingDownloadFailed)
    #expect(error.gapReason == .downloadFailed)
    #expect(served.server.objectRequests()[object.id] == 3)
    // The counts outlive the daemon (the handler is the server's until it goes).
    served.server.stop()
    served.server.stop()
    #expect(served.server.objectRequests()[object.id] == 3)
  }

  @Test func objectTimeoutIsDownloadFailed() async throws {
    // The object sends a thousand bytes, then nothing until the server stops: only the transfer's
    // deadline can end it (an answer merely slower than the deadline could be read whole by a
    // transport thread that comes back late to a timer that has already expired: CI saw it).
    var faults = ServerFaults()
    faults.stalledObjects = [String(recordingStart)]
    faults.stallSeconds = 600
    let served = try ServedLibrary(seconds: 3, faults: faults)
    let object = try await listing(served, token: served.token).get().segments[0]
    #expect(object.id == String(recordingStart))
    var policy = fastPolicy
    policy.deadline = .milliseconds(300)
    let impatient = CloudService(endpoint: URL(string: served.server.endpoint)!, policy: policy)
    guard case .failed(let error) = try blockingWait({ impatient.fetchObject(object, completion: $0) }) else {
      Issue.record("a transfer past its deadline did not fail")
      return
    }
    #expect(TiError(error).code == .recordingDownloadFailed)
    #expect(error.message.contains("gave up: deadline"), "\(error.message)")
  }

  @Test func objectLongerThanListedIsIntegrityFailed() async throws {
    let served = try ServedLibrary(seconds: 3)
    var object = try await listing(served, token: served.token).get().segments[0]
    object.size -= 100
    guard case .failed(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("an object longer than listed was accepted")
      return
    }
    #expect(error.gapReason == .integrityFailed)
  }

  @Test func objectNotMatchingItsDigestIsIntegrityFailed() async throws {
    let served = try ServedLibrary(seconds: 3)
    let object = try await listing(served, token: served.token).get().segments[0]
    let stored = try RecordingIndex.load(library: served.library).segments.first { $0.id == object.id }!
    var bytes = try Data(contentsOf: stored.fileURL(in: served.library))
    bytes[bytes.count / 2] ^= 0xFF
    try bytes.write(to: stored.fileURL(in: served.library))
    guard case .failed(let error) = await wait({ served.service.fetchObject(object, completion: $0) }) else {
      Issue.record("an object that does not match its SHA-256 was accepted")
      return
    }
    #expect(error.gapReason == .integrityFailed)
    // Without hashing on arrival the bytes come through, unverified, for the verifier to refuse.
    let plain = CloudService(
      endpoint: URL(string: served.server.endpoint)!, policy: fastPolicy, verifiesWhileReceiving: false)
    guard case .fetched(_, let verified) = await wait({ plain.fetchObject(object, completion: $0) }) else {
      Issue.record("the unverified fetch failed")
      return
    }
    #expect(!verified)
  }

  @Test func unresolvableHostIsEndpointDnsResolutionFailed() async throws {
    let service = CloudService(endpoint: URL(string: "http://no-such-host.invalid")!, policy: fastPolicy)
    let result = await wait { service.listSegments(in: window, token: "t", completion: $0) }.mapError(TiError.init)
    #expect(result.failure?.code == .endpointDnsResolutionFailed)
  }

  @Test func aRefusedConnectionIsTheServiceDown() async throws {
    // A port that was just free: connections to it are refused. The host answered: its service is down
    // (6123 after the retries), the local network is not (6136, C29).
    let served = try ServedLibrary(seconds: 3)
    let endpoint = served.server.endpoint
    served.server.stop()
    let service = CloudService(endpoint: URL(string: endpoint)!, policy: fastPolicy)
    let result = await wait { service.listSegments(in: window, token: "t", completion: $0) }.mapError(TiError.init)
    #expect(result.failure?.code == .cloudStorageUnavailable)
  }
}

extension Result {
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
