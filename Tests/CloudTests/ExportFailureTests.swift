import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// Rules.md E29 over real HTTP: what a failure does to an export — a missing object is a gap; a listing,
/// token or network failure ends the task.
@Suite struct ExportFailureTests {
  private func source(_ service: CloudService, token: String, _ range: MediaRange) -> CloudSegmentSource {
    CloudSegmentSource(service: service, range: range, token: token, prefetchBytes: 8 << 20)
  }

  @Test func E29_aMissingObjectIsAGapButListingTokenAndNetworkFailuresEndTheExport() throws {
    let scratch = try TemporaryDirectory()
    // A missing second object: a notFound gap, the export goes on and completes.
    let served = try ServedLibrary(seconds: 9)
    let stored = try RecordingIndex.load(library: served.library).segments.sorted { $0.startMs < $1.startMs }
    try FileManager.default.removeItem(at: stored[1].fileURL(in: served.library))
    let gap = try export(
      source(served.service, token: served.token, span(0, 9000)), range: span(0, 9000),
      to: scratch.url.appendingPathComponent("gap.mp4"))
    #expect(gap.code == .ok && gap.report.termination == .exhausted)
    #expect(gap.report.gaps.contains { $0.reasons.contains(.notFound) })
    // The listing fails (503 after retries), the token has expired, nothing listens: each ends the task.
    var faults = ServerFaults()
    faults.listingStatus = 503
    let unavailable = try ServedLibrary(seconds: 3, faults: faults)
    let down = try ServedLibrary(seconds: 3)
    let downService = CloudService(endpoint: URL(string: down.server.endpoint)!, policy: fastPolicy)
    let expiredToken = CloudToken(deviceId: served.deviceId, expires: now() - 10).signed(secret: secret)
    down.server.stop()
    for (name, service, token, code) in [
      ("listing", unavailable.service, unavailable.token, TiErrorCode.cloudStorageUnavailable),
      ("token", served.service, expiredToken, .tokenExpired),
      ("service down", downService, down.token, .cloudStorageUnavailable),
    ] {
      let output = scratch.url.appendingPathComponent("\(name).mp4")
      let result = try export(source(service, token: token, span(0, 3000)), range: span(0, 3000), to: output)
      #expect(result.code == code, "\(name)")
      #expect(result.report.termination == .failed && result.file == nil, "\(name)")
      #expect(!FileManager.default.fileExists(atPath: output.path))
    }
  }

  @Test func aCloudThatDripsEndsTheExportWithinItsStallBudgetAndOneThatMovesDoesNot() throws {
    let scratch = try TemporaryDirectory()
    // A byte a second on every object: each transfer stays alive within its own deadline (120 s by
    // default, four at a time), but the export as a whole receives almost nothing.
    var faults = ServerFaults()
    faults.bytesPerSecond = 1
    let dripping = try ServedLibrary(seconds: 36, faults: faults)
    let output = scratch.url.appendingPathComponent("drip.mp4")
    let stalled = try export(
      CloudSegmentSource(
        service: dripping.service, range: span(0, 36_000), token: dripping.token, stallBudget: .seconds(2)),
      range: span(0, 36_000), to: output)
    // The objects in flight at the first stall are gaps; the second stall, nothing received between,
    // ends it: the cloud does not answer (6123), which says nothing of the local network.
    #expect(stalled.code == .cloudStorageUnavailable, "\(stalled.message ?? "")")
    #expect(stalled.message?.contains("bytes in") == true, "\(stalled.message ?? "")")
    #expect(stalled.report.termination == .failed && stalled.file == nil)
    #expect(!FileManager.default.fileExists(atPath: output.path))
    // A slow cloud that keeps sending (64 KiB/s) is not a stall: the export completes. (A budget of
    // seconds more than a busy machine may keep the network thread from its transfers.)
    faults.bytesPerSecond = 64 << 10
    let slow = try ServedLibrary(seconds: 6, faults: faults)
    let moving = try export(
      CloudSegmentSource(service: slow.service, range: span(0, 6000), token: slow.token, stallBudget: .seconds(10)),
      range: span(0, 6000), to: scratch.url.appendingPathComponent("slow.mp4"))
    #expect(moving.code == .ok && moving.report.complete, "\(moving.message ?? "")")
  }

  @Test("one object that stalls while the others are served is a downloadFailed gap: the export goes on")
  func oneStalledObjectIsAGap() throws {
    let scratch = try TemporaryDirectory()
    let directory = try TemporaryDirectory("tipipe-cloud")
    try LibrarySynthesizer(options: smallOptions(seconds: 12)).write(to: directory.url)
    let stored = try RecordingIndex.load(library: directory.url).segments.sorted { $0.startMs < $1.startMs }
    var faults = ServerFaults()
    faults.stalledObjects = [stored[1].id]  // 3 s to 6 s: a thousand bytes, then nothing
    // Silent until the server stops, and a budget of seconds more than a busy machine may keep the
    // network thread from the other transfers: only the stalled object can be its gap.
    faults.stallSeconds = 600
    let served = try ServedLibrary(directory: directory, faults: faults)
    let result = try export(
      CloudSegmentSource(
        service: served.service, range: span(0, 12_000), token: served.token, prefetchBytes: 8 << 20,
        stallBudget: .seconds(8)),
      range: span(0, 12_000), to: scratch.url.appendingPathComponent("stalled.mp4"))
    #expect(result.code == .ok && result.report.termination == .exhausted, "\(result.message ?? "")")
    let gaps = result.report.gaps.filter { $0.reasons.contains(.downloadFailed) }
    let lost = ExportReport.Range(startMs: recordingStart + 3000, endMs: recordingStart + 6000)
    #expect(gaps.map(\.range) == [lost], "\(result.report.gaps)")
    #expect(result.report.coveredDurationMs >= 8_900 && result.report.coveredDurationMs <= 9_000)
    let file = try #require(result.file)
    let duration = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file.path])
    #expect(abs((Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 9) < 0.1, "\(duration)")
  }

  /// A renderer that only counts what it is given.
  final class Pictures: VideoRenderer, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func render(_ frame: DecodedFrame) { lock.withLock { count += 1 } }
    var presented: Int { lock.withLock { count } }
  }

  @Test func aReplayOfACloudThatDripsFailsWithinItsStallBudget() throws {
    var faults = ServerFaults()
    faults.bytesPerSecond = 1
    let dripping = try ServedLibrary(seconds: 36, faults: faults)
    let callbacks = DispatchQueue(label: "stall.callbacks")
    var environment = ReplayEnvironment.realtime(callbacks: callbacks)
    environment.stallBudget = .seconds(2)
    let replay = Replay(service: dripping.service, environment: environment)
    let pictures = Pictures()
    replay.bindVideo(channel: 0, renderer: pictures)
    let ended = DispatchSemaphore(value: 0)
    let outcomes = Locked<[String]>([])
    replay.onCompleted = {
      outcomes.withLock { $0.append("completed") }
      ended.signal()
    }
    replay.onError = { error in
      outcomes.withLock { $0.append("\(error.code)") }
      ended.signal()
    }
    #expect(
      replay.play(
        MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 36_000), token: dripping.token)
        == .ok)
    // A deadline, not a measure: the budget is 2 s; a lost callback fails here instead of hanging.
    #expect(ended.wait(timeout: .now() + 120) == .success)
    callbacks.sync {}
    #expect(outcomes.withLock { $0 } == ["\(TiErrorCode.cloudStorageUnavailable)"])
    #expect(pictures.presented == 0)
    replay.stop()
  }
}
