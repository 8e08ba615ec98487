import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// `KeyframeSampler`: one keyframe of a track per interval, and which objects a source may skip.
@Suite struct KeyframeSamplerTests {
  static let video = TrackID(.video, channel: 0)
  static func seconds(_ value: Double) -> MediaTime { MediaTime(microseconds: Int64(value * 1_000_000)) }

  static func packet(at seconds: Double, keyframe: Bool, track: TrackID = video) -> EncodedPacket {
    EncodedPacket(
      track: track, format: TrackFormat(codec: .h264, width: 16, height: 16), time: Self.seconds(seconds),
      duration: .microseconds(40_000), isKeyframe: keyframe, data: Data([0]))
  }

  @Test func theFirstKeyframeOfEachIntervalAndNothingElse() throws {
    let sampler = KeyframeSampler(track: Self.video, start: Self.seconds(10), interval: .microseconds(5_000_000))
    let harness = try NodeHarness(sampler)
    // 25 fps from 8 s to 30 s, a keyframe every 2 s at odd seconds; audio beside it.
    for index in 0..<550 {
      let time = 8 + Double(index) / 25
      harness.push(Self.packet(at: time, keyframe: index % 50 == 25))
      harness.push(Self.packet(at: time, keyframe: true, track: TrackID(.audio, channel: 1)))
    }
    harness.endInput()
    harness.runUntilIdle()
    // Keyframes at 9, 11, 13, …, 29: the first of [10, 15) is 11, of [15, 20) 15…
    let kept = harness.outputItems.map { Double($0.time.microseconds) / 1_000_000 }
    #expect(kept == [11, 15, 21, 25], "\(kept)")
    #expect(harness.outputItems.allSatisfy { $0.track == Self.video && $0.isKeyframe })
  }

  @Test func notAcrossGapsAnIntervalTakesNoKeyframeAfterAGapBegunInIt() throws {
    let sampler = KeyframeSampler(
      track: Self.video, start: Self.seconds(0), interval: .microseconds(10_000_000), acrossGaps: false)
    let harness = try NodeHarness(sampler)
    let gap = { (from: Double, to: Double, reason: GapReason) in
      PipelineEvent.gap(
        RecordingGap(range: MediaRange(start: Self.seconds(from), end: Self.seconds(to)), tracks: [], reasons: [reason])
      )
    }
    // [0, 10): a stretch the demuxer could not decode (read, no keyframe) does not close it: 3 s is taken.
    harness.push(event: gap(0, 3, .noKeyFrame))
    harness.push(Self.packet(at: 3, keyframe: true))
    // [10, 20): skipped objects from 12 s: the keyframe at 15 s may not be its first.
    harness.push(Self.packet(at: 11, keyframe: false))
    harness.push(event: gap(12, 14, .noRecording))
    harness.push(Self.packet(at: 15, keyframe: true))
    // [20, 30): a gap begun before it (at 18 s) does not close it; one of another track does not either.
    harness.push(event: gap(18, 21, .integrityFailed))
    harness.push(
      event: .gap(
        RecordingGap(
          range: MediaRange(start: Self.seconds(21), end: Self.seconds(22)), tracks: [TrackID(.audio, channel: 1)],
          reasons: [.noRecording])))
    harness.push(Self.packet(at: 23, keyframe: true))
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.outputItems.map(\.time) == [Self.seconds(3), Self.seconds(23)])
    // The gaps pass on.
    let gaps = harness.outputEvents.filter { event in
      if case .gap = try? MediaEvent(event) { return true }
      return false
    }
    #expect(gaps.count == 4)
  }

  @Test func aSourceSkipsTheObjectsThatCannotHoldASample() {
    // One picture a minute from 0; 10 s objects: the one holding each minute's start and the next.
    let minute = MediaDuration.microseconds(60_000_000)
    let held = (0..<12).map { piece in
      KeyframeSampler.mayHoldASample(
        MediaRange(start: Self.seconds(Double(piece) * 10), end: Self.seconds(Double(piece + 1) * 10)),
        start: Self.seconds(0), interval: minute)
    }
    #expect(held == [true, true, false, false, false, false, true, true, false, false, false, false])
    // An object that began before the range and reaches into it; extreme times keep the object.
    #expect(
      KeyframeSampler.mayHoldASample(
        MediaRange(start: Self.seconds(-5), end: Self.seconds(1)), start: MediaTime(microseconds: 0), interval: minute))
    #expect(
      KeyframeSampler.mayHoldASample(
        MediaRange(start: MediaTime(microseconds: .min), end: MediaTime(microseconds: .max)),
        start: MediaTime(microseconds: 0),
        interval: minute))
    #expect(
      KeyframeSampler.mayHoldASample(
        MediaRange(start: MediaTime(microseconds: .max - 5), end: MediaTime(microseconds: .max)),
        start: MediaTime(microseconds: 0),
        interval: .microseconds(7)))
  }
}
