import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

extension SDKRules {
  /// R19 through the SDK: what a new play replacing an active one ends and what it keeps.
  @Suite @MainActor struct Replacement {
    @Test func R19_aNewPlayEndsTheOldOneSilentlyAndKeepsBindingsVolumeAndSpeed() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.audio.setVolume(40) == ok)
      #expect(rig.play(0, 3000) == ok)  // the old play ends at 3 s
      await session.run(for: .milliseconds(2900))
      // The graph runs past the old play's end without the main queue delivering: its completion is
      // on its way when the new play is accepted.
      let past = session.clock.now + .milliseconds(400)
      session.executor.runUntilIdle(firingTimersOf: session.clock, through: past)
      session.clock.advance(to: past)
      let mark = rig.log.entries.count
      let frames = rig.view.renderedTimes.count
      let played = rig.device.played.count
      #expect(rig.play(4000, 9000) == ok)
      #expect(rig.video.core.binding?.replay === rig.replay && rig.video.core.binding?.channel == 0)
      #expect(rig.audio.core.binding?.replay === rig.replay && rig.audio.core.binding?.channel == 1)
      await session.run(for: .seconds(6))
      let entries = rig.log.entries
      // One completion, the new play's, after its end's time (the old one's was dropped, R70); no error.
      #expect(entries.count { $0 == .completed } == 1)
      let end = recordingStart + 9000
      let endIndex = try #require(entries.lastIndex(of: .time(end)))
      #expect(entries.firstIndex(of: .completed).map { $0 > endIndex } == true)
      #expect(!entries.contains { if case .error = $0 { true } else { false } })
      // Every time after the replacement is the new play's.
      let times = entries[mark...].compactMap { if case .time(let ms) = $0 { ms } else { nil } }
      #expect(!times.isEmpty && times.allSatisfy { (recordingStart + 4000...end).contains($0) }, "\(times)")
      // The bindings were kept: the same view and device go on, with the new play's media only.
      let newFrames = rig.view.renderedTimes.dropFirst(frames)
      #expect(!newFrames.isEmpty && newFrames.allSatisfy { $0 >= (recordingStart + 4000) * 1000 })
      let newSound = rig.device.played.dropFirst(played)
      #expect(!newSound.isEmpty && newSound.allSatisfy { $0.volume == 40 })  // the volume was kept
      #expect(rig.video.state == .completed)
      // The speed is kept: 3 s of media at 2× complete in 1.5 s of clock, not 3 s.
      #expect(rig.replay.setSpeed(.x2) == ok)
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(500))
      #expect(rig.play(6000, 9000) == ok)
      #expect(rig.replay.speed == .x2)
      let completions = rig.log.entries.count { $0 == .completed }
      await session.run(for: .milliseconds(1200))
      #expect(rig.log.entries.count { $0 == .completed } == completions)
      await session.run(for: .milliseconds(600))
      #expect(rig.log.entries.count { $0 == .completed } == completions + 1)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R70_eventsOfAStoppedPlayNotYetDeliveredAreDropped() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 3000) == ok)
      await session.run(for: .milliseconds(2900))
      // The graph runs past the play's end without the main queue delivering: its last times and its
      // completion are on their way when it is stopped.
      let past = session.clock.now + .milliseconds(400)
      session.executor.runUntilIdle(firingTimersOf: session.clock, through: past)
      session.clock.advance(to: past)
      let mark = rig.log.entries.count
      #expect(rig.replay.stop() == ok)
      await session.run(for: .seconds(2))
      let after = rig.log.entries[mark...]
      #expect(!after.contains(.completed), "\(Array(after))")
      #expect(!after.contains { if case .time = $0 { true } else { false } }, "\(Array(after))")
      #expect(!after.contains { if case .error = $0 { true } else { false } })
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }
  }
}
