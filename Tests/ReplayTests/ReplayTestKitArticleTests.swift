import Foundation
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// The examples of ReplayTestKit's article "Testing a replay deterministically", as written there: an
/// article whose code no longer holds fails here.
@Suite struct ReplayTestKitArticleTests {
  @Test func aHoleIsReportedOnceAndThePlayCompletes() throws {
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 3)], audio: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.log.gaps.count == 1)
    // 6 s of pictures at 25 fps, each presented at its own media time after the first.
    let frames = harness.renderer.frames
    #expect(frames.count == 150)
    let first = frames[0]
    #expect(frames.allSatisfy { $0.at - first.at == $0.media - first.media || $0.media >= harness.media(6000) })
  }

  @Test func driveTimeYourself() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.play(0, 9000)
    harness.run(for: .seconds(1))
    #expect(harness.replay.pause() == .ok)
    let shown = harness.renderer.frames.count
    harness.run(for: .seconds(5))
    #expect(harness.renderer.frames.count == shown)  // paused: nothing presented
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 6000)) == .ok)
    harness.run(for: .milliseconds(100))
    #expect(harness.renderer.frames.last?.media == harness.media(6000))  // the target's frame is shown while paused
  }

  @Test func failADownloadAtAChosenMoment() throws {
    let harness = try ReplayHarness(seconds: 9)
    harness.service.hold(3000)  // the object starting 3 s in
    harness.play(0, 9000)
    harness.run(for: .seconds(2))
    #expect(harness.service.fail(with: MediaError(.networkUnavailable, "cable pulled")))
    harness.runToEnd()
    #expect(harness.log.errors == [.networkUnavailable])
  }
}
