import Foundation
import MediaTestSupport
import Nodes
import Testing

@testable import TiCloudStorage

extension SDKRules {
  @Suite @MainActor struct ReplayFacade {
    @Test func R66_aPlayThroughTheFacadeRendersReportsTheHoleAndCompletes() async throws {
      let session = try SDKSession()
      #expect(session.initializeCode == TiCloudStorageErrorCode.ok)
      let rig = ReplayRig()
      #expect(rig.play() == TiCloudStorageErrorCode.ok)
      #expect(rig.video.state == .buffering)
      await session.run(for: .milliseconds(500))
      #expect(rig.video.state == .rendering)
      #expect(rig.audio.state == .playing)
      await session.run(for: .seconds(10))
      #expect(rig.log.entries.contains(.completed))
      #expect(rig.log.entries.contains(.gap(recordingStart + 3000, recordingStart + 4000)))
      #expect(rig.video.state == .completed)
      #expect(rig.audio.state == .completed)
      #expect(rig.replay.currentTimeMs == recordingStart + 9000)
      #expect(rig.log.onMainThread.allSatisfy { $0 })
      #expect(rig.log.videoStates == [.buffering, .rendering, .completed])
      #expect(!rig.view.renderedTimes.isEmpty)
      #expect(rig.tearDown().allSatisfy { $0 == TiCloudStorageErrorCode.ok })
      #expect(session.close() == TiCloudStorageErrorCode.ok)
    }
  }
}
