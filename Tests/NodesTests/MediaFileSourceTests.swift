import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("MediaFileSource reads files made by the ffmpeg CLI")
struct MediaFileSourceTests {
  func makeFile(_ name: String, in directory: URL, extraArguments: [String]) throws -> URL {
    let file = directory.appendingPathComponent(name)
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=16000", "-t", "4", "-c:v", "libx264", "-g", "25", "-c:a", "aac",
      ] + extraArguments + [file.path])
    return file
  }

  @Test("a flush reads the file again from its start (MP4, MPEG-TS, raw H.264 and AAC)")
  func flushRereadsFromTheStart() throws {
    let directory = try TemporaryDirectory()
    let mp4 = try makeFile("flush.mp4", in: directory.url, extraArguments: ["-bf", "2"])
    let ts = try makeFile("flush.ts", in: directory.url, extraArguments: [])
    let h264 = directory.url.appendingPathComponent("flush.h264")
    let aac = directory.url.appendingPathComponent("flush.aac")
    // A raw stream has no timestamps: without B-frames its frames are shown in the order they come.
    let plain = try makeFile("plain.mp4", in: directory.url, extraArguments: ["-bf", "0"])
    _ = try run("/usr/bin/ffmpeg", ["-v", "error", "-i", plain.path, "-map", "0:v", "-c", "copy", h264.path])
    _ = try run("/usr/bin/ffmpeg", ["-v", "error", "-i", mp4.path, "-map", "0:a", "-c", "copy", aac.path])
    for file in [mp4, ts, h264, aac] {
      let executor = ManualExecutor()
      let pipeline = Pipeline(executor: executor, clock: VirtualClock())
      let sink = CollectingSink<EncodedPacket>()
      let failures = LockedArray<String>()
      pipeline.errorHandler = {
        failures.append("\($0)"); return .stopPipeline
      }
      pipeline.connect(MediaFileSource(path: file.path), to: sink)
      try pipeline.start()
      executor.runUntilIdle()
      let first = sink.items.map { "\($0.track) \($0.time) \($0.data.count)" }
      #expect(first.count > 50, "\(file.lastPathComponent): \(first.count) packets")
      sink.reset()
      pipeline.flush()
      executor.runUntilIdle()
      let again = sink.items.map { "\($0.track) \($0.time) \($0.data.count)" }
      #expect(
        again == first, "\(file.lastPathComponent): \(again.count) packets after the flush, \(first.count) before")
      pipeline.stop()
      executor.runUntilIdle()
    }
  }

  @Test(
    "a flush seeking to a time reads from the keyframe at or before it (MP4, MKV, MPEG-TS); raw streams from the start")
  func flushSeeksToTheKeyframeBeforeTheTarget() throws {
    let directory = try TemporaryDirectory()
    let raw = directory.url.appendingPathComponent("seek.h264")
    let mp4 = try makeFile("seek.mp4", in: directory.url, extraArguments: ["-bf", "2"])
    _ = try run("/usr/bin/ffmpeg", ["-v", "error", "-i", mp4.path, "-map", "0:v", "-c", "copy", raw.path])
    for file in [
      mp4, try makeFile("seek.mkv", in: directory.url, extraArguments: []),
      try makeFile("seek.ts", in: directory.url, extraArguments: []), raw,
    ] {
      let executor = ManualExecutor()
      let pipeline = Pipeline(executor: executor, clock: VirtualClock())
      let sink = CollectingSink<EncodedPacket>()
      pipeline.connect(MediaFileSource(path: file.path, startTime: MediaTime(microseconds: 0)), to: sink)
      try pipeline.start()
      executor.runUntilIdle()
      sink.reset()
      // -g 25: keyframes every second; 2.5 s lies in the group of 2 s.
      _ = pipeline.flush(seekingTo: MediaTime(microseconds: 2_500_000))
      executor.runUntilIdle()
      let video = sink.items.filter { $0.track.kind == .video }
      let first = try #require(video.first, "\(file.lastPathComponent)")
      #expect(first.isKeyframe, "\(file.lastPathComponent)")
      // MP4 and Matroska have an index: the keyframe of 2 s. MPEG-TS has none: libavformat lands on any
      // packet, and the source goes back until a keyframe at or before the target comes first (not the
      // file's start).
      let expected: ClosedRange<Int64> =
        file == raw ? 0...0 : file.pathExtension == "ts" ? 900_000...2_500_000 : 1_900_000...2_100_000
      #expect(expected.contains(first.time.microseconds), "\(file.lastPathComponent): \(first.time)")
      pipeline.stop()
      executor.runUntilIdle()
    }
  }

  @Test("an MP4 with B-frames, an MKV and an MPEG-TS decode to ffprobe's frame counts")
  func containers() throws {
    let directory = try TemporaryDirectory()
    let start = MediaTime(milliseconds: 1_795_996_800_000)
    for (name, extra) in [("bframes.mp4", ["-bf", "2"]), ("plain.mkv", ["-bf", "0"]), ("stream.ts", [])] {
      let file = try makeFile(name, in: directory.url, extraArguments: extra)
      let probedVideo = try #require(try probe(file, stream: "v:0"))
      let probedAudio = try #require(try probe(file, stream: "a:0"))
      let result = try decodeFile(file, start: start)
      #expect(result.damaged == 0)
      #expect(String(result.video.count) == probedVideo.nb_read_frames, "\(name)")
      #expect(String(result.audio.count) == probedAudio.nb_read_frames, "\(name)")
      #expect(result.video.first.map { $0.frame.width } == 320)
      // Presentation order: frames come out of the decoder 40 ms apart, the first one at `start` (MP4) or
      // as far after it as the container delays video against audio (MKV, TS: x264's 64 ms).
      let times = result.video.map(\.time.microseconds)
      let offset = (times.first ?? -1) - start.microseconds
      #expect(name.hasSuffix(".mp4") ? offset == 0 : (0...100_000).contains(offset), "\(name): \(offset)")
      #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 40_000 }, "\(name)")
      #expect(result.changes == 2)
    }
  }

  @Test("a missing file is notFound, a file that is not media is mediaUnreadable")
  func badFiles() throws {
    let directory = try TemporaryDirectory()
    let garbage = directory.url.appendingPathComponent("garbage.mp4")
    try Data(repeating: 0x42, count: 4096).write(to: garbage)
    for (path, expected) in [
      (directory.url.appendingPathComponent("none.mp4").path, GapReason.notFound), (garbage.path, .mediaUnreadable),
    ] {
      let executor = ManualExecutor()
      let pipeline = Pipeline(executor: executor, clock: VirtualClock())
      let failures = LockedArray<NodeFailure>()
      pipeline.errorHandler = {
        failures.append($0); return .stopPipeline
      }
      pipeline.connect(
        MediaFileSource(path: path, startTime: .init(microseconds: 0)), to: CollectingSink<EncodedPacket>())
      try pipeline.start()
      executor.runUntilIdle()
      #expect(failures.values.first.map { MediaError($0.error).gapReason } == expected)
    }
  }
}
