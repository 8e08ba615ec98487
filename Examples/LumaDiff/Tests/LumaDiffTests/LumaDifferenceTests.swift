import LumaDiff
import MediaSynthesis
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("LumaDifference")
struct LumaDifferenceTests {
  func picture(_ ms: Int64, luma: UInt8) throws -> DecodedFrame {
    try SyntheticFrames.picture(time: MediaTime(milliseconds: ms), width: 16, height: 8) { plane, _, _ in
      plane == 0 ? luma : 128
    }
  }

  @Test("the mean absolute luma change from the picture before, none for the first, none after a seek")
  func changes() throws {
    let harness = try NodeHarness(LumaDifference())
    harness.push(contentsOf: [try picture(0, luma: 10), try picture(40, luma: 10), try picture(80, luma: 40)])
    harness.runUntilIdle()
    #expect(
      harness.readOutput().compactMap(\.item) == [
        LumaChange(time: MediaTime(milliseconds: 40), difference: 0),
        LumaChange(time: MediaTime(milliseconds: 80), difference: 30),
      ])
    harness.flush()
    harness.push(try picture(120, luma: 0))
    harness.runUntilIdle()
    #expect(harness.readOutput().compactMap(\.item).isEmpty)
    #expect(harness.finish() == .clean)
  }

  @Test("a picture in a format without a luma plane is refused with unsupportedFormat")
  func refusesRGB() throws {
    let harness = try NodeHarness(LumaDifference())
    harness.push(
      try SyntheticFrames.picture(time: MediaTime(milliseconds: 0), width: 4, height: 4, format: .rgb24) { _, _, _ in 0
      })
    harness.runUntilIdle()
    #expect(harness.reportedFailures.map { MediaError($0.error).kind } == [.unsupportedFormat])
  }

  @Test("the keyframe counter counts its track's packets")
  func countsKeyframes() throws {
    let counter = KeyframeCounter(track: TrackID(.video, channel: 0))
    let harness = try NodeHarness(counter)
    for index in 0..<10 {
      harness.push(
        SyntheticFrames.videoPacket(time: MediaTime(milliseconds: Int64(index) * 40), isKeyframe: index % 5 == 0))
    }
    harness.push(
      SyntheticFrames.videoPacket(
        track: TrackID(.video, channel: 1), time: MediaTime(milliseconds: 0), isKeyframe: true))
    harness.runUntilIdle()
    #expect(counter.packetCount == 10 && counter.keyframeCount == 2)
  }
}
