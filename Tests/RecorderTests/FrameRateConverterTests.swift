import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// `FrameRateConverter` placing pictures on its constant rate (manual executor, virtual clock).
@Suite("Frame rate converter")
struct FrameRateConverterTests {
  @Test(
    "each picture goes to the slot nearest its time, as ffmpeg's fps filter puts it: a picture 15 ms after a slot is shown there, not 25 ms late in the next"
  )
  func picturesGoToTheNearestSlot() throws {
    let converter = try FrameRateConverter(fps: 25, origin: MediaTime(microseconds: 0))
    let harness = try NodeHarness(converter)
    let pictures = try (0..<10).map {
      DecodedFrame(
        track: TrackID(.video, channel: 0), time: .microseconds(15_000 + Int64($0) * 40_000),
        duration: .microseconds(40_000),
        frame: try RecorderFixtures.picture(width: 16, height: 16, value: UInt8(20 + $0)))
    }
    harness.push(contentsOf: pictures)
    harness.endInput()
    harness.runUntilIdle()
    let output = harness.outputItems
    // The last one also covers the slot its own 40 ms reach (400 ms).
    #expect(output.map(\.time.microseconds) == (0...10).map { Int64($0) * 40_000 }, "\(output.map(\.time))")
    // Slot k (k × 40 ms) shows picture k (at k × 40 + 15 ms); the first also fills the slot before it.
    for (slot, picture) in zip(output, pictures) {
      #expect(slot.frame === picture.frame, "slot \(slot.time) shows another picture")
    }
  }
}
