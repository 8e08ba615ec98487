import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// The endpoint kinds every listing rule runs on.
enum EndpointKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case local, cloud
  var testDescription: String { rawValue }
}

/// A listing-only library behind either endpoint kind.
struct Listing {
  let directory: TemporaryDirectory
  let served: ServedLibrary?
  let service: any RecordingService
  let token: String

  init(_ kind: EndpointKind, _ ranges: [(Int64, Int64)], faults: ServerFaults = ServerFaults()) throws {
    directory = try indexOnlyLibrary(ranges)
    switch kind {
    case .local:
      served = nil
      service = LocalLibraryService(directory: directory.url)
      token = "any token"
    case .cloud:
      let served = try ServedLibrary(directory: directory, faults: faults)
      self.served = served
      service = served.service
      token = served.token
    }
  }

  func list(_ start: Int64, _ end: Int64, token: String? = nil) async -> Result<[MediaRange], TiError> {
    await RecordingQueries.listRecordings(service: service, token: token ?? self.token, startMs: start, endMs: end)
  }

  func days(_ start: String, _ end: String, zone: String = RecordingQueries.defaultTimeZone, token: String? = nil) async
    -> Result<[RecordingDay], TiError>
  {
    await RecordingQueries.listRecordingDays(
      service: service, token: token ?? self.token, startDate: start, endDate: end, timeZoneId: zone)
  }
}

func pairs(_ ranges: [MediaRange]) -> [[Int64]] { ranges.map { [$0.start.milliseconds, $0.end.milliseconds] } }

/// rules.md group Q, one test per rule (Q12, Q13 and Q28's main-queue delivery belong to the SDK facade).
@Suite struct ListingRuleTests {
  static let base: Int64 = 1_796_000_000_000
  let b = Self.base

  @Test(arguments: EndpointKind.allCases)
  func Q1_halfOpenInterval(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000), (b + 2000, b + 3000)])
    // A range that ends where a recording starts does not include it.
    #expect(pairs(try await listing.list(b - 500, b + 2000).get()) == [[b, b + 1000]])
    #expect(pairs(try await listing.list(b + 1000, b + 2000).get()) == [])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q2_sortedAscending(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b + 5000, b + 6000), (b, b + 1000), (b + 2000, b + 3000)])
    let ranges = try await listing.list(b, b + 10_000).get()
    #expect(ranges.map(\.start) == ranges.map(\.start).sorted())
    #expect(ranges.count == 3)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q3_clippedToTheRequest(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 10_000)])
    #expect(pairs(try await listing.list(b + 2000, b + 3000).get()) == [[b + 2000, b + 3000]])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q4_overlappingAndAbuttingMerged(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000), (b + 500, b + 2000), (b + 2000, b + 3000), (b + 3000, b + 3001)])
    #expect(pairs(try await listing.list(b, b + 10_000).get()) == [[b, b + 3001]])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q5_anyHoleKeepsRangesApart(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000), (b + 1001, b + 2000)])
    #expect(pairs(try await listing.list(b, b + 10_000).get()) == [[b, b + 1000], [b + 1001, b + 2000]])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q6_oneSnapshotWithoutPagination(_ kind: EndpointKind) async throws {
    let ranges = (0..<2000).map { (b + Int64($0) * 2000, b + Int64($0) * 2000 + 1000) }
    let listing = try Listing(kind, ranges)
    #expect(try await listing.list(b, b + 4_000_000).get().count == 2000)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q7_noRecordingsIsOkAndEmpty(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000)])
    #expect(try await listing.list(b + 5000, b + 9000).get().isEmpty)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q8_tenDaysAcceptedLongerRefused(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000)])
    #expect(try await listing.list(b, b + 864_000_000).get().count == 1)
    #expect(await listing.list(b, b + 864_000_001).failure?.code == .rangeTooLarge)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q9_moreThan10000RangesIsRangeTooLarge(_ kind: EndpointKind) async throws {
    let ranges = (0..<10_001).map { (b + Int64($0) * 2, b + Int64($0) * 2 + 1) }
    let listing = try Listing(kind, ranges)
    #expect(await listing.list(b, b + 30_000).failure?.code == .rangeTooLarge)
    // Exactly 10,000 is returned whole.
    #expect(try await listing.list(b, b + 20_000).get().count == 10_000)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q10_startNotBeforeEndIsInvalidArgument(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000)])
    #expect(await listing.list(b, b).failure?.code == .invalidArgument)
    #expect(await listing.list(b + 1, b).failure?.code == .invalidArgument)
    #expect(await listing.list(Int64.min, Int64.max).failure?.code == .invalidArgument)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q11_rangesAreUTCMillisecondsWithEndAfterStart(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1), (b + 1, b + 5), (b + 7, b + 9)])
    let ranges = try await listing.list(b, b + 100).get()
    #expect(ranges.allSatisfy { $0.end > $0.start })
    #expect(pairs(ranges) == [[b, b + 5], [b + 7, b + 9]])
  }

  @Test func Q14_aQueryUsesTheTokenItStartedWith() async throws {
    // The token is a value captured by the call: a query started with an expired token fails even if a
    // valid one is used for the next, and the next succeeds.
    let listing = try Listing(.cloud, [(b, b + 1000)])
    let served = try #require(listing.served)
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 5).signed(secret: secret)
    let service = listing.service
    let valid = listing.token
    let first = await RecordingQueries.listRecordings(service: service, token: expired, startMs: b, endMs: b + 2000)
    let second = await RecordingQueries.listRecordings(service: service, token: valid, startMs: b, endMs: b + 2000)
    #expect(first.failure?.code == .tokenExpired)
    #expect(try second.get().count == 1)
  }

  @Test func Q15_expiredAndInvalidTokens() async throws {
    let listing = try Listing(.cloud, [(b, b + 1000)])
    let served = try #require(listing.served)
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 5).signed(secret: secret)
    let otherDevice = CloudToken(deviceId: "other", expires: now() + 3600).signed(secret: secret)
    #expect(await listing.list(b, b + 2000, token: expired).failure?.code == .tokenExpired)
    #expect(await listing.list(b, b + 2000, token: "v1.x.1.00").failure?.code == .permissionDenied)
    #expect(await listing.list(b, b + 2000, token: otherDevice).failure?.code == .permissionDenied)
  }

  @Test(arguments: [500, 503, 429])
  func Q16_serviceFailuresAreCloudStorageUnavailable(status: Int) async throws {
    var faults = ServerFaults()
    faults.listingStatus = status
    let listing = try Listing(.cloud, [(b, b + 1000)], faults: faults)
    #expect(await listing.list(b, b + 2000).failure?.code == .cloudStorageUnavailable)
    var malformed = ServerFaults()
    malformed.malformedListing = true
    #expect(
      try await Listing(.cloud, [(b, b + 1000)], faults: malformed).list(b, b + 2000).failure?.code
        == .cloudStorageUnavailable)
    // A local library whose index is not JSON is the same.
    let broken = try TemporaryDirectory()
    try Data("{".utf8).write(to: broken.url.appendingPathComponent("index.json"))
    let local = await RecordingQueries.listRecordings(
      service: LocalLibraryService(directory: broken.url), token: "t", startMs: b, endMs: b + 1)
    #expect(local.failure?.code == .cloudStorageUnavailable)
  }

  @Test func Q17_networkDownAndUnresolvableHostHaveTheirOwnCodes() async throws {
    let dns = CloudService(endpoint: URL(string: "http://no-such-host.invalid:8080")!, policy: fastPolicy)
    let unresolved = await RecordingQueries.listRecordings(service: dns, token: "t", startMs: b, endMs: b + 1)
    #expect(unresolved.failure?.code == .endpointDnsResolutionFailed)
    // The seed's code on top, libcurl's failure underneath (CURLE_COULDNT_RESOLVE_HOST).
    let resolveCause = unresolved.failure?.cause as? LibraryFailure
    #expect(resolveCause?.library == "libcurl" && resolveCause?.status == 6, "\(String(describing: resolveCause))")
    let served = try ServedLibrary(directory: try indexOnlyLibrary([(b, b + 1)]))
    let endpoint = served.server.endpoint
    served.server.stop()
    let down = CloudService(endpoint: URL(string: endpoint)!, policy: fastPolicy)
    let refused = await RecordingQueries.listRecordings(service: down, token: "t", startMs: b, endMs: b + 1)
    // A host that refuses the connection is reachable: its service is down (cloud-api.md: a transfer
    // failure after the retries), not the local network (C29).
    #expect(refused.failure?.code == .cloudStorageUnavailable)
    // CURLE_COULDNT_CONNECT, and the detailed description names it.
    let connectCause = refused.failure?.cause as? LibraryFailure
    #expect(connectCause?.library == "libcurl" && connectCause?.status == 7, "\(String(describing: connectCause))")
    #expect(refused.failure?.detailedDescription.contains("libcurl 7") == true)
  }

  @Test func Q18_cancellingTheTaskEndsTheQueryWithCancelled() async throws {
    var faults = ServerFaults()
    faults.latencyMilliseconds = 5000
    let listing = try Listing(.cloud, [(b, b + 1000)], faults: faults)
    let service = listing.service
    let token = listing.token
    let task = Task {
      await RecordingQueries.listRecordings(service: service, token: token, startMs: b, endMs: b + 2000)
    }
    // At once: the request may or may not be on the wire yet; either way the query must end cancelled.
    task.cancel()
    let result = await task.value
    // Had the cancellation not stopped the request, the server's answer (held 5 s) would have been a
    // success. (No wall-clock bound here: the test's own task may wait for a busy cooperative pool.)
    #expect(result.failure?.code == .cancelled)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q19_failuresCarryNoRanges(_ kind: EndpointKind) async throws {
    // The result type holds either ranges or an error: a failure cannot carry a partial list.
    let listing = try Listing(kind, (0..<10_001).map { (b + Int64($0) * 2, b + Int64($0) * 2 + 1) })
    let result = await listing.list(b, b + 30_000)
    #expect((try? result.get()) == nil)
    #expect(result.failure?.code == .rangeTooLarge)
  }

  // MARK: Days

  @Test(arguments: EndpointKind.allCases)
  func Q20_Q21_Q22_everyDayOnceAscendingStrictDates(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(1_796_140_800_000, 1_796_140_860_000)])  // 2026-12-01T16:00Z
    let days = try await listing.days("2026-11-29", "2026-12-03", zone: "UTC").get()
    #expect(days.map(\.date) == ["2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02", "2026-12-03"])
    #expect(days.map(\.hasRecording) == [false, false, true, false, false])
    let single = try await listing.days("2026-12-01", "2026-12-01", zone: "UTC").get()
    #expect(single == [RecordingDay(date: "2026-12-01", hasRecording: true)])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q23_daysSplitAtLocalMidnight(_ kind: EndpointKind) async throws {
    // 2026-11-30T15:30Z to 16:30Z crosses midnight in Shanghai (UTC+8): both local days have it.
    let crossing = try Listing(kind, [(1_796_052_600_000, 1_796_056_200_000)])
    let shanghai = try await crossing.days("2026-11-30", "2026-12-02", zone: "Asia/Shanghai").get()
    #expect(shanghai.map(\.hasRecording) == [true, true, false])
    let utc = try await crossing.days("2026-11-30", "2026-12-02", zone: "UTC").get()
    #expect(utc.map(\.hasRecording) == [true, false, false])
    // A recording that ends exactly at local midnight does not touch the next day (half-open).
    let atMidnight = try Listing(kind, [(1_796_050_800_000, 1_796_054_400_000)])  // 15:00Z–16:00Z = 23:00–00:00 +08
    #expect(try await atMidnight.days("2026-11-30", "2026-12-01").get().map(\.hasRecording) == [true, false])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q23_daylightSavingDaysLast23And25Hours(_ kind: EndpointKind) async throws {
    // New York, 2026-03-08 (23 h, 05:00Z to 04:00Z next day) and 2026-11-01 (25 h, 04:00Z to 05:00Z).
    let springEnd: Int64 = 1_773_028_800_000  // 2026-03-09T04:00Z, local midnight after the short day
    let late = try Listing(kind, [(springEnd - 1000, springEnd)])  // the last second of 03-08, local
    #expect(
      try await late.days("2026-03-08", "2026-03-09", zone: "America/New_York").get().map(\.hasRecording) == [
        true, false,
      ])
    let fallEnd: Int64 = 1_793_595_600_000  // 2026-11-02T05:00Z, local midnight after the long day
    let long = try Listing(kind, [(fallEnd - 1000, fallEnd)])
    #expect(
      try await long.days("2026-11-01", "2026-11-02", zone: "America/New_York").get().map(\.hasRecording) == [
        true, false,
      ])
    // In UTC that second lies on the next day.
    #expect(try await long.days("2026-11-01", "2026-11-02", zone: "UTC").get().map(\.hasRecording) == [false, true])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q24_defaultTimeZoneIsShanghai(_ kind: EndpointKind) async throws {
    #expect(RecordingQueries.defaultTimeZone == "Asia/Shanghai")
    // 2026-11-30T17:00Z is 2026-12-01T01:00 in Shanghai.
    let listing = try Listing(kind, [(1_796_058_000_000, 1_796_058_060_000)])
    #expect(try await listing.days("2026-11-30", "2026-12-01").get().map(\.hasRecording) == [false, true])
  }

  @Test(arguments: EndpointKind.allCases)
  func Q25_Q26_thirtyOneDaysAcceptedMoreRefused(_ kind: EndpointKind) async throws {
    // 31 days span four listing requests of at most 10 days each; recordings on the first and last day.
    let listing = try Listing(kind, [(1_796_083_200_000, 1_796_083_201_000), (1_798_675_200_000, 1_798_675_201_000)])
    let days = try await listing.days("2026-12-01", "2026-12-31", zone: "UTC").get()
    #expect(days.count == 31)
    #expect(days.filter(\.hasRecording).map(\.date) == ["2026-12-01", "2026-12-31"])
    #expect(await listing.days("2026-12-01", "2027-01-01", zone: "UTC").failure?.code == .rangeTooLarge)
  }

  @Test(arguments: EndpointKind.allCases)
  func Q27_malformedDatesAndZonesAreInvalidArgument(_ kind: EndpointKind) async throws {
    let listing = try Listing(kind, [(b, b + 1000)])
    for (start, end, zone) in [
      ("2026-2-3", "2026-02-04", "UTC"), ("2026-02-30", "2026-03-01", "UTC"), ("2026-03-02", "2026-03-01", "UTC"),
      ("2026-03-01", "2026-03-01", "Mars/Olympus"), ("2026-13-01", "2026-13-02", "UTC"),
      ("２０２６-03-01", "2026-03-01", "UTC"),
      ("2026-03-01 ", "2026-03-01", "UTC"), ("", "", "UTC"), ("2026-03-01", "2026-03-01", ""),
      // Offsets Foundation would read, but no IANA ids (Q24): `Etc/GMT-8` is.
      ("2026-03-01", "2026-03-01", "UTC+8"), ("2026-03-01", "2026-03-01", "GMT+8"),
      ("2026-03-01", "2026-03-01", "+08:00"), ("2026-03-01", "2026-03-01", "CST"),
    ] {
      #expect(await listing.days(start, end, zone: zone).failure?.code == .invalidArgument, "\(start) \(end) \(zone)")
    }
    for zone in ["Etc/GMT-8", "UTC", "Europe/Paris", "America/Argentina/Buenos_Aires"] {
      #expect(await listing.days("2026-03-01", "2026-03-01", zone: zone).failure == nil, "\(zone)")
    }
  }

  @Test func Q29_daysReportTheSameFailuresAsRanges() async throws {
    let listing = try Listing(.cloud, [(b, b + 1000)])
    let served = try #require(listing.served)
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 5).signed(secret: secret)
    #expect(await listing.days("2026-12-01", "2026-12-02", token: expired).failure?.code == .tokenExpired)
    #expect(await listing.days("2026-12-01", "2026-12-02", token: "nope").failure?.code == .permissionDenied)
    var faults = ServerFaults()
    faults.listingStatus = 503
    let down = try Listing(.cloud, [(b, b + 1000)], faults: faults)
    #expect(await down.days("2026-12-01", "2026-12-02").failure?.code == .cloudStorageUnavailable)
    let dns = CloudService(endpoint: URL(string: "http://no-such-host.invalid")!, policy: fastPolicy)
    let result = await RecordingQueries.listRecordingDays(
      service: dns, token: "t", startDate: "2026-12-01", endDate: "2026-12-01")
    #expect(result.failure?.code == .endpointDnsResolutionFailed)
  }
}
