import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("InputSelector: two files, one stream, switched at a keyframe")
struct InputSelectorTests {
  /// A 6-second 25 fps picture from ffmpeg's `source`, keyframes every 2 s, no B-frames, with a tone.
  func makeFile(_ source: String, in directory: URL) throws -> URL {
    let file = directory.appendingPathComponent("\(source).mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "\(source)=size=320x240:rate=25", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=44100", "-t", "6", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", "-g",
        "50", "-c:a", "aac",
        file.path,
      ])
    return file
  }

  /// The PSNR (dB) of `a`'s picture at `atA` s against `b`'s at `atB` s.
  func psnr(_ a: URL, _ atA: Double, _ b: URL, _ atB: Double, in directory: URL) throws -> Double {
    let (pa, pb) = (directory.appendingPathComponent("a.png"), directory.appendingPathComponent("b.png"))
    for (file, at, png) in [(a, atA, pa), (b, atB, pb)] {
      _ = try runForStandardError(
        "/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", file.path, "-ss", "\(at)", "-frames:v", "1", png.path])
    }
    let text = try runForStandardError(
      "/usr/bin/ffmpeg", ["-v", "info", "-nostats", "-i", pa.path, "-i", pb.path, "-lavfi", "psnr", "-f", "null", "-"])
    guard let range = text.range(of: "average:") else { return -1 }
    let value = text[range.upperBound...].prefix { !$0.isWhitespace }
    return value == "inf" ? 100 : Double(value) ?? -1
  }

  @Test("the first input until the second's keyframe at or after the switch, then the second: every frame once")
  func switchesAtAKeyframe() throws {
    let directory = try TemporaryDirectory()
    let first = try makeFile("testsrc", in: directory.url)
    let second = try makeFile("smptebars", in: directory.url)
    let output = directory.url.appendingPathComponent("switched.mp4")
    let executor = ThreadExecutor(name: "test.selector")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let a = MediaFileSource(path: first.path)
    let b = MediaFileSource(path: second.path, videoChannel: 2, audioChannel: 3)
    let selector = InputSelector(
      choices: [
        .init(video: TrackID(.video, channel: 0), audio: TrackID(.audio, channel: 1)),
        .init(video: TrackID(.video, channel: 2), audio: TrackID(.audio, channel: 3)),
      ], videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1))
    // Asked for 3 s: the second input's next keyframe is at 4 s.
    selector.select(1, at: MediaTime(microseconds: 3_000_000))
    let writer = MP4Writer(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1))
    pipeline.connect(a, to: selector)
    pipeline.connect(b, to: selector)
    pipeline.connect(selector, to: writer)
    let failures = try pipeline.runToCompletion().failures
    #expect(failures.isEmpty, "\(failures.map { "\($0.error)" })")
    #expect(selector.switches.map(\.at) == [MediaTime(microseconds: 4_000_000)])
    let judged = try MediaFileExportTests.judge(output)
    #expect(judged.videoFrames == 150)
    try MediaFileExportTests.expectAudioWithVideo(judged, "switched")
    #expect(try psnr(output, 1.0, first, 1.0, in: directory.url) > 40, "before the switch: the first input")
    #expect(try psnr(output, 3.96, first, 3.96, in: directory.url) > 40, "the last frame of the first input")
    #expect(try psnr(output, 4.0, second, 4.0, in: directory.url) > 40, "from the switch: the second input")
    #expect(try psnr(output, 5.0, first, 5.0, in: directory.url) < 20, "not the first input after it")
  }
}

@Suite("InputSelector holds at most its limit at a switch")
struct InputSelectorBoundTests {
  let a = TrackID(.video, channel: 0)
  let b = TrackID(.video, channel: 2)

  func packet(_ track: TrackID, _ ms: Int64, key: Bool = false) -> EncodedPacket {
    EncodedPacket(
      track: track, format: TrackFormat(codec: .h264, width: 320, height: 240), time: MediaTime(milliseconds: ms),
      duration: .microseconds(40_000), isKeyframe: key, data: Data(count: 100))
  }

  func harness() throws -> NodeHarness<InputSelector> {
    try NodeHarness(InputSelector(choices: [.init(video: a), .init(video: b)], videoTrack: a))
  }

  @Test("a new input without a keyframe: the old input flows on, no more than 10 s behind, and the switch moves on")
  func newInputWithoutKeyframe() throws {
    let harness = try harness()
    harness.node.select(1, at: MediaTime(milliseconds: 1000))
    // The old input plays 60 s (a keyframe every 2 s); the new one sends only non-keyframes meanwhile.
    for ms in stride(from: Int64(0), to: 60_000, by: 40) {
      harness.push(packet(a, ms, key: ms % 2000 == 0))
      harness.push(packet(b, ms))
    }
    harness.runUntilIdle()
    let out = harness.outputItems.map(\.time.milliseconds)
    // Everything but the last 10 s of the old input went out, in order; nothing of the new one.
    #expect(out.count >= (60_000 - 10_000) / 40 - 1, "\(out.count) packets out")
    #expect(out == out.sorted())
    #expect(harness.outputItems.allSatisfy { $0.track == a })
    // Then the new input's keyframe: the switch is at it, after what already went out.
    harness.push(packet(b, 60_000, key: true))
    harness.push(packet(a, 60_000, key: true))
    harness.push(packet(b, 60_040))
    harness.runUntilIdle()
    #expect(harness.node.switches.map(\.at.milliseconds) == [60_000])
    let times = harness.outputItems.map(\.time.milliseconds)
    #expect(times == Array(stride(from: Int64(0), through: 60_040, by: 40)), "every instant once")
  }

  @Test("an old input that lags by more than 10 s: the switch goes ahead without it")
  func oldInputLagging() throws {
    let harness = try harness()
    harness.node.select(1, at: MediaTime(milliseconds: 1000))
    harness.push(packet(a, 0, key: true))
    // The new input runs 30 s ahead; the old one sends nothing more.
    for ms in stride(from: Int64(2000), to: 32_000, by: 40) { harness.push(packet(b, ms, key: ms % 2000 == 0)) }
    harness.runUntilIdle()
    #expect(harness.node.switches.map(\.at.milliseconds) == [2000])
    #expect(harness.node.active == 1)
    // The new input's packets went out: what is held is never more than the limit.
    #expect(harness.outputItems.count == 1 + (32_000 - 2000) / 40)
  }
}
