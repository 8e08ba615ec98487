import CloudServer
import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// A Replay over the reference server (real HTTP on loopback), on its own thread and a free-running
/// clock; `finished` is signalled by the play's one `onCompleted` or `onError`.
final class ServedReplay: @unchecked Sendable {
  let directory: TemporaryDirectory
  let server: ReferenceServer
  let replay: Replay
  let log = ReplayLog()
  let finished = DispatchSemaphore(value: 0)
  let deviceId: String
  /// What the video output heard ("presenting", "completed", "failed <code>").
  let outputEvents = Locked<[String]>([])

  /// The queue the replay delivers its callbacks on (a test may suspend it: callbacks wait there).
  let callbacks = DispatchQueue(label: "test.replay")

  init(faults: ServerFaults = ServerFaults(), endpoint: URL? = nil) throws {
    directory = try TemporaryDirectory("tipipe-served-replay")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: directory.url)
    deviceId = try RecordingIndex.load(library: directory.url).deviceId
    var configuration = ServerConfiguration(root: directory.url, secret: "replay-secret")
    configuration.port = 0
    configuration.faults = faults
    server = try ReferenceServer(configuration)
    var policy = TransferPolicy()
    policy.backoff = .milliseconds(5)
    policy.maximumBackoff = .milliseconds(20)
    let service = CloudService(endpoint: endpoint ?? URL(string: server.endpoint)!, policy: policy)
    replay = Replay(service: service, environment: .freeRunning(callbacks: callbacks))
    let outputEvents = self.outputEvents
    replay.bindVideo(channel: 0, renderer: NullRenderer()) { event in
      let name =
        switch event {
        case .presenting: "presenting"
        case .completed: "completed"
        case .failed(let error): "failed \(error.code.rawValue)"
        }
      outputEvents.withLock { $0.append(name) }
    }
    let log = self.log
    let finished = self.finished
    replay.onTimeChanged = { log.append(.time($0)) }
    replay.onRecordingGap = { log.append(.gap($0)) }
    replay.onCompleted = {
      log.append(.completed)
      finished.signal()
    }
    replay.onError = {
      log.append(.error($0.code))
      finished.signal()
    }
  }

  func token(expires: Int64 = 3600, device: String? = nil) -> String {
    CloudToken(deviceId: device ?? deviceId, expires: Int64(Date().timeIntervalSince1970) + expires)
      .signed(secret: "replay-secret")
  }

  /// Plays the whole recording with `token` and waits for its end.
  func playToEnd(token: String) throws {
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: token)
        == .ok)
    try finished.wait(for: "the play's end")
    replay.stop()
  }

  deinit { server.stop() }
}

@Suite struct ReplayErrorTests {
  @Test func R10_R63_R65_aServedPlayCompletesOnce() throws {
    let served = try ServedReplay()
    try served.playToEnd(token: served.token())
    #expect(served.log.completions == 1)
    #expect(served.log.errors.isEmpty)
    #expect(served.replay.statistics.videoFrames == 150)
  }

  @Test func R55_R61_R64_R65_anExpiredTokenEndsThePlayWithTokenExpired() throws {
    let served = try ServedReplay()
    try served.playToEnd(token: served.token(expires: -10))
    #expect(served.log.errors == [.tokenExpired])
    #expect(served.log.completions == 0)  // R65
  }

  @Test func R61_anInvalidOrForeignTokenIsPermissionDenied() throws {
    for token in ["garbage", ServedReplay.foreignToken()] {
      let served = try ServedReplay()
      try served.playToEnd(token: token)
      #expect(served.log.errors == [.permissionDenied])
    }
  }

  @Test func R60_anUnavailableServiceIsCloudStorageUnavailable() throws {
    var faults = ServerFaults()
    faults.listingStatus = 503
    let served = try ServedReplay(faults: faults)
    try served.playToEnd(token: served.token())
    #expect(served.log.errors == [.cloudStorageUnavailable])
  }

  @Test func R62_networkAndNameFailuresHaveTheirOwnCodes() throws {
    let dns = try ServedReplay(endpoint: URL(string: "http://no-such-host.invalid")!)
    try dns.playToEnd(token: dns.token())
    #expect(dns.log.errors == [.endpointDnsResolutionFailed])
    let down = try ServedReplay()
    let endpoint = URL(string: down.server.endpoint)!
    down.server.stop()
    let refused = try ServedReplay(endpoint: endpoint)
    refused.server.stop()
    try refused.playToEnd(token: refused.token())
    // A host that refuses is reachable: its service is down. (A network that is down: PlayCommandTests,
    // in a network namespace of its own.)
    #expect(refused.log.errors == [.cloudStorageUnavailable])
  }
}

/// R56–R59, R73: a recording that fails for good is a gap when a later one plays, else the play's error.
@Suite struct ReplayRecordingFailureTests {
  /// The served library's object files, in time order (two of 3 s each).
  private func objects(_ served: ServedReplay) throws -> [URL] {
    let index = try RecordingIndex.load(library: served.directory.url)
    return index.segments.sorted { $0.startMs < $1.startMs }.map { $0.fileURL(in: served.directory.url) }
  }

  @Test func R57_R72_R73_aMissingLastRecordingEndsThePlayWithRecordingNotFound() throws {
    let served = try ServedReplay()
    try FileManager.default.removeItem(at: try objects(served)[1])
    try served.playToEnd(token: served.token())
    #expect(served.log.errors == [.recordingNotFound])
    #expect(served.log.completions == 0)
    // The failure is the play's error, not a gap as well; the first 3 s played.
    #expect(served.log.gaps.isEmpty)
    #expect(served.replay.statistics.videoFrames == 75)
    // The output drained what played, but the play failed: it did not complete (O8).
    #expect(served.outputEvents.withLock { $0 } == ["presenting"])
  }

  @Test func R73_aMissingEarlierRecordingIsAGapAndThePlayCompletes() throws {
    let served = try ServedReplay()
    try FileManager.default.removeItem(at: try objects(served)[0])
    try served.playToEnd(token: served.token())
    #expect(served.log.errors.isEmpty && served.log.completions == 1)
    #expect(served.outputEvents.withLock { $0 } == ["presenting", "completed"])
    // Decoding starts afresh in the second object: up to its first keyframe (4 s; a GOP is 2 s) too.
    #expect(served.log.gaps.map(\.reasons) == [[.notFound, .noKeyFrame]])
    #expect(
      served.log.gaps.first?.range
        == MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 4000))
    // Reported between the time events around it: before the first position after the gap.
    let entries = served.log.entries
    let gapIndex = try #require(entries.firstIndex { if case .gap = $0 { true } else { false } })
    #expect(entries[..<gapIndex].allSatisfy { if case .time = $0 { false } else { true } })
    #expect(served.replay.statistics.videoFrames == 50)
  }

  @Test func R58_recordingsThatCannotBeDownloadedEndThePlayWithRecordingDownloadFailed() throws {
    var faults = ServerFaults()
    faults.failFirst = 1000
    faults.failStatus = 500
    let served = try ServedReplay(faults: faults)
    try served.playToEnd(token: served.token())
    #expect(served.log.errors == [.recordingDownloadFailed])
    #expect(served.log.completions == 0 && served.log.gaps.isEmpty)
  }

  @Test func R59_aCorruptLastRecordingEndsThePlayWithRecordingUnreadable() throws {
    let served = try ServedReplay()
    let last = try objects(served)[1]
    var bytes = try Data(contentsOf: last)
    bytes[bytes.count / 2] ^= 0xFF
    try bytes.write(to: last)
    try served.playToEnd(token: served.token())
    #expect(served.log.errors == [.recordingUnreadable])
    #expect(served.log.completions == 0 && served.log.gaps.isEmpty)
  }

  @Test func R56_noErrorForAStoppedOrReplacedPlayOverAFailedRecording() throws {
    for replaced in [false, true] {
      let served = try ServedReplay()
      try FileManager.default.removeItem(at: try objects(served)[1])
      // The play fails (its last object is gone) while its callbacks wait on the suspended queue: its
      // error is pending when it is stopped or replaced, and is never delivered.
      served.callbacks.suspend()
      #expect(
        served.replay.play(
          MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: served.token())
          == .ok)
      try waitUntil("the play over a missing object to fail") { !served.replay.isActive }
      if replaced {
        #expect(
          served.replay.play(
            MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 3000),
            token: served.token()) == .ok)
        served.callbacks.resume()
        try served.finished.wait(for: "the new play's end")
      } else {
        #expect(served.replay.stop() == .ok)
        served.callbacks.resume()
      }
      served.callbacks.sync {}
      #expect(served.log.errors.isEmpty, "replaced: \(replaced)")
      #expect(served.log.completions == (replaced ? 1 : 0), "replaced: \(replaced)")
      #expect(served.log.gaps.isEmpty)
    }
  }
}

extension ServedReplay {
  static func foreignToken() -> String {
    CloudToken(deviceId: "another-device", expires: Int64(Date().timeIntervalSince1970) + 3600)
      .signed(secret: "replay-secret")
  }
}
