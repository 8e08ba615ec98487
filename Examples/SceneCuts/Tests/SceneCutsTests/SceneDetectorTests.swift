import MediaSynthesis
import Nodes
import PipelineGraph
import PipelineTestKit
import SceneCuts
import Testing

@Suite("SceneDetector")
struct SceneDetectorTests {
  func picture(_ ms: Int64, luma: UInt8) throws -> DecodedFrame {
    try SyntheticFrames.picture(time: MediaTime(milliseconds: ms), width: 16, height: 8) { plane, _, _ in
      plane == 0 ? luma : 128
    }
  }

  @Test("a change of brightness is a scene change; pictures from 80 ms before it to 120 ms after are kept")
  func decides() throws {
    let decisions = ValveDecisions()
    let detector = SceneDetector(
      decisions: decisions, threshold: 30, lead: .microseconds(80_000), keep: .microseconds(120_000))
    let harness = try NodeHarness(detector)
    let lumas: [UInt8] = [10, 12, 10, 11, 200, 201, 200, 199, 200, 198]
    harness.push(contentsOf: try lumas.enumerated().map { try picture(Int64($0.offset) * 40, luma: $0.element) })
    harness.runUntilIdle()
    // Decisions lag the pictures by the lead.
    #expect(decisions.keptRanges.isEmpty || decisions.keptRanges.first?.start == MediaTime(milliseconds: 80))
    _ = harness.finish()
    #expect(detector.changes.map(\.time) == [MediaTime(milliseconds: 160)])
    #expect(detector.changes.first.map { $0.difference > 180 } == true)
    #expect(
      decisions.keptRanges == [MediaRange(start: MediaTime(milliseconds: 80), end: MediaTime(milliseconds: 280))])
  }
}
