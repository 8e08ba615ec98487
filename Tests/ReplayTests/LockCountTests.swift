import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

#if DEBUG
  /// How many locks a presented frame costs on the whole path (source to renderer, the replay's own
  /// bookkeeping and the test's clock driver included), counted through the engine's debug hook
  /// (`LockTally`) on a deterministic replay. The path's own share is listed in the TiCloudStorage
  /// catalog's "Replay and export as graphs" (Locks); this test keeps the total from creeping back up.
  @Suite(.serialized) struct LockCountTests {
    @Test func aPresentedFrameTakesFewLocks() throws {
      let harness = try ReplayHarness(seconds: 60, audio: true)
      harness.play(0, 60_000)
      harness.run(for: .seconds(2))
      let videoBefore = harness.renderer.frames.count
      let audioBefore = harness.audio.instants.count
      let taken = LockTally.counting { harness.run(for: .seconds(40)) }
      let presented = harness.renderer.frames.count - videoBefore + harness.audio.instants.count - audioBefore
      // 40 s: 1000 pictures at 25 fps and 625 AAC frames of 64 ms.
      #expect(presented == 1625)
      // 2026-12-04: 11,547 for 1,625 frames (7.1 each): per frame the Replay's (1), the pacer's timer on
      // the virtual clock (1: the monotonic clock takes none), the clock driver's (about 4.7: the test's,
      // not the path's), a position report's delivery now and then. The shared timeline took one a frame
      // until its mapping was published to the pacers (13,172). Before this count existed the same run
      // took 20,298 (the timeline took 3 a frame, the clock's time 1, an audio frame's volume 1).
      #expect(taken <= presented * 15 / 2, "\(taken) locks for \(presented) frames")
    }
  }
#endif
