import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// `FrameRateConverter` placing pictures on its constant rate (manual executor, virtual clock).
@Suite("Frame rate converter")
struct FrameRateConverterTests {
  /// Ten pictures 40 ms apart from `offset` µs, through a 25 fps converter whose slots start at 0: which
  /// picture (index) each output slot shows, and the slots' times.
  static func slots(offset: Int64) throws -> (pictures: [Int], times: [Int64]) {
    let converter = try FrameRateConverter(fps: 25, origin: MediaTime(microseconds: 0))
    let harness = try NodeHarness(converter)
    let pictures = try (0..<10).map {
      DecodedFrame(
        track: TrackID(.video, channel: 0), time: .microseconds(offset + Int64($0) * 40_000),
        duration: .microseconds(40_000),
        frame: try RecorderFixtures.picture(width: 16, height: 16, value: UInt8(20 + $0)))
    }
    harness.push(contentsOf: pictures)
    harness.endInput()
    harness.runUntilIdle()
    let output = harness.outputItems
    return (
      output.map { slot in pictures.firstIndex { $0.frame === slot.frame } ?? -1 },
      output.map(\.time.microseconds)
    )
  }

  @Test(
    "each picture goes to the slot nearest its time, as ffmpeg's fps filter puts it: a picture 15 ms after a slot is shown there, not 25 ms late in the next; the last fills the slots its end rounds to"
  )
  func picturesGoToTheNearestSlot() throws {
    // The judge: the same ten pictures (`ffmpeg -f lavfi -i testsrc=r=25:d=0.4 -c:v libx264
    // -output_ts_offset O o.mkv`) through `ffmpeg -copyts -i o.mkv -vf fps=25:start_time=0,showinfo`:
    // O = 0.015 gives slots 0…360 ms, picture k in slot k; O = 0.020 (halfway) and 0.025 give 0…400 ms,
    // picture 0 in slots 0 and 1 and picture k in slot k + 1 (a picture halfway between two slots goes to
    // the later slot, and the last picture's end, 415 / 420 / 425 ms, rounds to 10, 11 and 11 slots).
    let early = try Self.slots(offset: 15_000)
    #expect(early.times == (0...9).map { Int64($0) * 40_000 }, "\(early.times)")
    #expect(early.pictures == Array(0...9))
    for offset: Int64 in [20_000, 25_000] {
      let late = try Self.slots(offset: offset)
      #expect(late.times == (0...10).map { Int64($0) * 40_000 }, "\(offset): \(late.times)")
      #expect(late.pictures == [0] + Array(0...9), "\(offset): \(late.pictures)")
    }
  }
}
