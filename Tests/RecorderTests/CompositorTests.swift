import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing
import TrackRecording

/// The compositors (seed 003, "Compositing", RC4): the mixer nodes on the manual executor, sample by
/// sample and pixel by pixel, then the compositors feeding a recorder, judged by ffmpeg.
@Suite struct CompositorTests {
  static let a = TrackID(.audio, channel: 0)
  static let b = TrackID(.audio, channel: 1)

  /// `count` samples of a constant `value`, mono 48 kHz, at `seconds`.
  static func level(_ value: Int16, at seconds: Double, count: Int = 480, track: TrackID) throws -> DecodedFrame {
    DecodedFrame(
      track: track, time: .microseconds(Int64(seconds * 1_000_000)),
      duration: .microseconds(Int64(count) * 1_000_000 / 48_000),
      frame: try FrameBuffer.sound(sampleRate: 48_000, channels: 1, count: count) { samples in
        for index in 0..<samples.count { samples[index] = value }
      })
  }

  static func samples(_ frames: [DecodedFrame]) -> [Int16] {
    frames.flatMap { frame in
      frame.frame.withSamples { samples -> [Int16] in
        guard let samples else { return [] }
        return samples.int16(channel: 0)
      }
    }
  }

  @Test func RC4_theAudioMixerAddsWithGainsAndBendsWhatWouldClip() throws {
    let mixer = try AudioMixer(
      inputs: [Self.a, Self.b], gains: [1, 0.5], format: AudioDeviceFormat(sampleRate: 48_000, channels: 1),
      output: TrackID(.audio, channel: 9))
    let harness = try NodeHarness(mixer)
    // 0.1 s of each: 1000 and 4000 (gain ½ → 2000): 3000 throughout.
    for index in 0..<10 {
      harness.push(try Self.level(1000, at: Double(index) / 100, track: Self.a))
      harness.push(try Self.level(4000, at: Double(index) / 100, track: Self.b))
    }
    // Then two loud inputs whose sum passes full scale: bent below it, never wrapped.
    for index in 10..<20 {
      harness.push(try Self.level(30_000, at: Double(index) / 100, track: Self.a))
      harness.push(try Self.level(30_000, at: Double(index) / 100, track: Self.b))
    }
    harness.push(event: .custom(TrackEnded(track: Self.a)))
    harness.push(event: .custom(TrackEnded(track: Self.b)))
    harness.endInput()
    harness.runUntilIdle()
    let mixed = Self.samples(harness.outputItems)
    #expect(mixed.count >= 9600)
    #expect(mixed.prefix(4800).allSatisfy { $0 == 3000 }, "the first 0.1 s")
    let loud = mixed[4800..<9600]
    #expect(loud.allSatisfy { $0 > 29_490 && $0 <= 32_767 }, "45000 bent: \(loud.min()!)…\(loud.max()!)")
    #expect(mixer.limitedSamples >= 4800)
    #expect(harness.outputItems.allSatisfy { $0.track == TrackID(.audio, channel: 9) })
  }

  @Test func RC4_aLateOrStalledInputDoesNotHoldTheMixBack() throws {
    let mixer = try AudioMixer(
      inputs: [Self.a, Self.b], format: AudioDeviceFormat(sampleRate: 48_000, channels: 1),
      output: TrackID(.audio, channel: 9))
    let harness = try NodeHarness(mixer)
    // Only A brings sound, B nothing: while the clock stands still B is waited for (a file that decodes
    // more slowly); once it has brought nothing for more than 0.5 s, the mix goes on with A alone.
    for index in 0..<50 { harness.push(try Self.level(100, at: Double(index) / 100, track: Self.a)) }
    harness.runUntilIdle()
    #expect(harness.outputItems.isEmpty, "B is waited for while the clock stands still")
    harness.advance(by: .milliseconds(600))
    for index in 50..<100 { harness.push(try Self.level(100, at: Double(index) / 100, track: Self.a)) }
    harness.runUntilIdle()
    let early = Self.samples(harness.outputItems)
    #expect(early.count >= 24_000, "\(early.count) samples mixed while B was silent")
    #expect(early.allSatisfy { $0 == 100 })
    // B starts late (at 1 s): its sound joins where it belongs.
    for index in 100..<150 {
      harness.push(try Self.level(100, at: Double(index) / 100, track: Self.a))
      harness.push(try Self.level(50, at: Double(index) / 100, track: Self.b))
    }
    harness.push(event: .custom(TrackEnded(track: Self.a)))
    harness.push(event: .custom(TrackEnded(track: Self.b)))
    harness.endInput()
    harness.runUntilIdle()
    let all = Self.samples(harness.outputItems)
    #expect(all.count >= 72_000)
    #expect(all[49_000..<71_000].allSatisfy { $0 == 150 }, "A and B together after B's start")
  }

  static let left = TrackID(.video, channel: 0)
  static let right = TrackID(.video, channel: 1)

  static func picture(_ value: UInt8, at seconds: Double, track: TrackID) throws -> DecodedFrame {
    DecodedFrame(
      track: track, time: .microseconds(Int64(seconds * 1_000_000)), duration: .microseconds(50_000),
      frame: try RecorderFixtures.picture(width: 320, height: 240, value: value))
  }

  /// The mean luma of a region of a yuv420p picture.
  static func mean(_ frame: DecodedFrame, x: Int, y: Int, width: Int, height: Int) -> Double {
    frame.withPlanes { planes in
      let luma = planes[0]
      var sum = 0
      for row in y..<(y + height) {
        let line = luma.row(row)
        for column in x..<(x + width) { sum += Int(line[column]) }
      }
      return Double(sum) / Double(width * height)
    }
  }

  @Test func RC4_theVideoMixerShowsEachInputInItsCellAndAnEndedOneGoesBlack() throws {
    let mixer = try VideoMixer(
      inputs: [Self.left, Self.right], cells: VideoMixer.Cell.grid(2, width: 640, height: 360), width: 640,
      height: 360, fps: 10, output: TrackID(.video, channel: 9))
    let harness = try NodeHarness(mixer)
    // Left: 3 s of luma 60; right: 1 s of luma 180, then its end.
    for index in 0..<60 {
      harness.push(try Self.picture(60, at: Double(index) / 20, track: Self.left))
      if index < 20 { harness.push(try Self.picture(180, at: Double(index) / 20, track: Self.right)) }
      if index == 19 { harness.push(event: .custom(TrackEnded(track: Self.right))) }
    }
    harness.push(event: .custom(TrackEnded(track: Self.left)))
    harness.endInput()
    harness.runUntilIdle()
    let pictures = harness.outputItems
    #expect(pictures.count == 30, "3 s at 10 fps")
    #expect(pictures.allSatisfy { $0.frame.width == 640 && $0.frame.height == 360 })
    // 320×240 into 320×360 cells: 60 black rows above and below.
    let at = { (seconds: Double) in pictures[Int(seconds * 10)] }
    #expect(Self.mean(at(0.5), x: 0, y: 60, width: 320, height: 240) == 60)
    #expect(Self.mean(at(0.5), x: 320, y: 60, width: 320, height: 240) == 180)
    #expect(Self.mean(at(0.5), x: 0, y: 0, width: 640, height: 60) == 16, "the bars are black")
    // Right ended at 1 s: its last picture for a second more, then black.
    #expect(Self.mean(at(1.5), x: 320, y: 60, width: 320, height: 240) == 180)
    #expect(Self.mean(at(2.5), x: 320, y: 60, width: 320, height: 240) == 16)
    #expect(Self.mean(at(2.5), x: 0, y: 60, width: 320, height: 240) == 60)
    #expect(pictures.map(\.time) == (0..<30).map { MediaTime(microseconds: Int64($0) * 100_000) })
  }

  @Test func RC4_aRecordingOfTwoFilesComposedInAGridWithTheirSoundMixed() async throws {
    let directory = try TemporaryDirectory("compose")
    let first = try RecorderFixtures.mediaFile(in: directory.url, name: "a.mp4", seconds: 2, width: 640, height: 480)
    let second = try RecorderFixtures.mediaFile(
      in: directory.url, name: "b.mp4", seconds: 2, width: 320, height: 240, sampleRate: 48_000)
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe([
      "record", "--input", first.path, "--input", second.path, "--grid", "--name", "grid", "--size", "640x240",
      "--data-root", root,
    ])
    #expect(done.status == 0, "\(done.stderr)")
    let file = URL(fileURLWithPath: root + "/Recordings/grid.mp4")
    let streams = try RecorderFixtures.streams(of: file)
    #expect(streams.map(\.codec) == ["h264", "aac"])
    #expect(streams.first?.width == 640 && streams.first?.frames == 40)
    #expect(streams.last?.channels == 2 && streams.last?.sampleRate == 48_000)
    // Each half shows its file: against ffmpeg's own scaling of each source into 320×240.
    let picture = try RecorderFixtures.luma(of: file, picture: 20)
    let halves = (0..<240).reduce(into: ([UInt8](), [UInt8]())) { halves, row in
      halves.0 += picture[(row * 640)..<(row * 640 + 320)]
      halves.1 += picture[(row * 640 + 320)..<(row * 640 + 640)]
    }
    let leftReference = try RecorderFixtures.scaledLuma(of: first, at: 1.0, width: 320, height: 240)
    let rightReference = try RecorderFixtures.scaledLuma(of: second, at: 1.0, width: 320, height: 240)
    #expect(RecorderFixtures.psnr(halves.0, leftReference) >= 28)
    #expect(RecorderFixtures.psnr(halves.1, rightReference) >= 28)
  }
}
