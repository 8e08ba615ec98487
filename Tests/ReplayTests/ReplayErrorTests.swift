import CloudServer
import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
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
    replay = Replay(service: service, environment: .freeRunning(callbacks: DispatchQueue(label: "test.replay")))
    replay.bindVideo(channel: 0, renderer: NullRenderer())
    let log = self.log
    let finished = self.finished
    replay.onTimeChanged = { log.append(.time($0)) }
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
  func playToEnd(token: String) {
    #expect(replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 6000, token: token) == .ok)
    finished.wait()
    replay.stop()
  }

  deinit { server.stop() }
}

@Suite struct ReplayErrorTests {
  @Test func R10_R63_aServedPlayCompletesOnce() throws {
    let served = try ServedReplay()
    served.playToEnd(token: served.token())
    #expect(served.log.completions == 1)
    #expect(served.log.errors.isEmpty)
    #expect(served.replay.statistics.videoFrames == 150)
  }

  @Test func R55_R61_anExpiredTokenEndsThePlayWithTokenExpired() throws {
    let served = try ServedReplay()
    served.playToEnd(token: served.token(expires: -10))
    #expect(served.log.errors == [.tokenExpired])
    #expect(served.log.completions == 0)  // R65
  }

  @Test func R61_anInvalidOrForeignTokenIsPermissionDenied() throws {
    for token in ["garbage", ServedReplay.foreignToken()] {
      let served = try ServedReplay()
      served.playToEnd(token: token)
      #expect(served.log.errors == [.permissionDenied])
    }
  }

  @Test func R60_anUnavailableServiceIsCloudStorageUnavailable() throws {
    var faults = ServerFaults()
    faults.listingStatus = 503
    let served = try ServedReplay(faults: faults)
    served.playToEnd(token: served.token())
    #expect(served.log.errors == [.cloudStorageUnavailable])
  }

  @Test func R62_networkAndNameFailuresHaveTheirOwnCodes() throws {
    let dns = try ServedReplay(endpoint: URL(string: "http://no-such-host.invalid")!)
    dns.playToEnd(token: dns.token())
    #expect(dns.log.errors == [.endpointDnsResolutionFailed])
    let down = try ServedReplay()
    let endpoint = URL(string: down.server.endpoint)!
    down.server.stop()
    let refused = try ServedReplay(endpoint: endpoint)
    refused.server.stop()
    refused.playToEnd(token: refused.token())
    #expect(refused.log.errors == [.networkUnavailable])
  }
}

extension ServedReplay {
  static func foreignToken() -> String {
    CloudToken(deviceId: "another-device", expires: Int64(Date().timeIntervalSince1970) + 3600)
      .signed(secret: "replay-secret")
  }
}
