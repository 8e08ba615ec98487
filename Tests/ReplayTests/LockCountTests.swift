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
  /// bookkeeping and the callbacks included; the virtual clock, a stand-in for the monotonic one, not),
  /// counted through the engine's debug hook (`LockTally`) on a deterministic replay: at most one per
  /// presented frame (issue 25). The TiCloudStorage catalog's "Replay and export as graphs" (Locks) lists
  /// what remains.
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
      // 2026-12-05: 335 for 1,625 frames (0.21 each), all of them the test's callbacks (its log of the
      // ~10 position reports a second); the path from decoder to renderer takes none: the Replay's rules are
      // confined to its executor (no lock of its own per frame), the timeline's mapping and the audio
      // levels are published values, the virtual clock's lock is not counted (it stands in for the
      // monotonic clock, which takes none) and the test's renderer and device take NSLocks, which are
      // not counted either. Before: 11,547 (7.1 a frame: the Replay's lock, the virtual clock's for the
      // pacer's timer and about 4.7 for the test's clock driver); before the count existed, 20,298.
      #expect(taken <= presented, "\(taken) locks for \(presented) frames")
    }
  }
#endif
