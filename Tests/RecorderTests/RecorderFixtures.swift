import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TrackRecording

/// What the recorder tests share: media files made by ffmpeg, tracks fed frame by frame, ffprobe's view
/// of a file, pictures read back as luma.
enum RecorderFixtures {
  /// A `seconds`-long file of `width`×`height` at `fps` (ffmpeg's testsrc2, libx264 with B-frames) with a
  /// 440 Hz tone at `sampleRate` (AAC), or without sound.
  static func mediaFile(
    in directory: URL, name: String = "in.mp4", seconds: Int = 4, width: Int = 640, height: Int = 480, fps: Int = 30,
    sampleRate: Int? = 44_100
  ) throws -> URL {
    let url = directory.appendingPathComponent(name)
    var arguments = [
      "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(fps)",
    ]
    if let sampleRate { arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(sampleRate)"] }
    arguments += ["-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    arguments += sampleRate == nil ? [] : ["-c:a", "aac"]
    _ = try run("/usr/bin/ffmpeg", arguments + [url.path])
    return url
  }

  /// ffprobe's streams of `url`: codec, size, average rate, duration, frame count.
  struct Stream: Sendable {
    var codec: String
    var width: Int?
    var height: Int?
    var averageRate: String?
    var duration: Double?
    var frames: Int?
    var sampleRate: Int?
    var channels: Int?
  }

  static func streams(of url: URL, countFrames: Bool = true) throws -> [Stream] {
    let data = try runForData(
      "/usr/bin/ffprobe",
      ["-v", "error"] + (countFrames ? ["-count_frames"] : []) + [
        "-show_entries", "stream=codec_name,width,height,avg_frame_rate,duration,nb_read_frames,sample_rate,channels",
        "-of", "json", url.path,
      ])
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let streams = try #require(object["streams"] as? [[String: Any]])
    return streams.map { entry in
      Stream(
        codec: entry["codec_name"] as? String ?? "", width: entry["width"] as? Int, height: entry["height"] as? Int,
        averageRate: entry["avg_frame_rate"] as? String, duration: (entry["duration"] as? String).flatMap(Double.init),
        frames: (entry["nb_read_frames"] as? String).flatMap(Int.init),
        sampleRate: (entry["sample_rate"] as? String).flatMap(Int.init), channels: entry["channels"] as? Int)
    }
  }

  /// What ffmpeg's `gray` gives for limited-range luma `value` (16…235 stretched to 0…255).
  static func fullRange(_ value: UInt8) -> Double { (Double(value) - 16) * 255 / 219 }

  /// The luma of picture `index` of `url` as ffmpeg decodes it (width × height bytes, full range).
  static func luma(of url: URL, picture index: Int) throws -> [UInt8] {
    [UInt8](
      try runForData(
        "/usr/bin/ffmpeg",
        [
          "-v", "error", "-i", url.path, "-vf", "select=eq(n\\,\(index))", "-frames:v", "1", "-f", "rawvideo",
          "-pix_fmt", "gray", "-",
        ]))
  }

  /// The luma of `url`'s picture shown at `seconds`, scaled by ffmpeg to `width`×`height`.
  static func scaledLuma(of url: URL, at seconds: Double, width: Int, height: Int) throws -> [UInt8] {
    try ffmpegLuma(of: url, at: seconds, width: width, height: height)
  }

  /// PSNR in dB of two equal-sized byte planes.
  static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double { lumaPSNR(a, b) }

  /// A yuv420p picture of `width`×`height` whose luma is `value` everywhere (chroma neutral).
  static func picture(width: Int = 320, height: Int = 240, value: UInt8) throws -> FrameBuffer {
    try FrameBuffer.picture(width: width, height: height, format: .yuv420p) {
      plane, base, stride, _, rows in
      memset(base, Int32(plane == 0 ? value : 128), stride * rows)
    }
  }

  /// 1024 samples of a `frequency` tone at 48 kHz, mono, starting at sample `first`.
  static func tone(first: Int, count: Int = 1024, frequency: Double = 440) throws -> FrameBuffer {
    try FrameBuffer.sound(sampleRate: 48_000, channels: 1, count: count) { samples in
      for index in 0..<count {
        samples[index] = Int16(8000 * sin(2 * .pi * frequency * Double(first + index) / 48_000))
      }
    }
  }
}

/// Tracks a test feeds frame by frame: 20 fps pictures whose luma tells their second (16 + 20 × s),
/// and 48 kHz tone in 1024-sample frames, interleaved by time, each push waiting for room.
@MainActor
final class FedTracks {
  let video = MediaTrack(id: TrackID(.video, channel: 0))
  let audio = MediaTrack(id: TrackID(.audio, channel: 0))
  private var nextPicture = 0
  private var nextSample = 0

  /// The luma of the pictures of source second `second`.
  static func value(ofSecond second: Int) -> UInt8 { UInt8(16 + 20 * (second % 11)) }

  /// Pushes everything up to source time `seconds`.
  func feed(until seconds: Double) async throws {
    while true {
      let pictureTime = Double(nextPicture) / 20
      let soundTime = Double(nextSample) / 48_000
      guard min(pictureTime, soundTime) < seconds else { return }
      if pictureTime <= soundTime {
        let frame = DecodedFrame(
          track: video.id, time: .microseconds(Int64(nextPicture) * 50_000), duration: .microseconds(50_000),
          frame: try RecorderFixtures.picture(value: Self.value(ofSecond: nextPicture / 20)))
        nextPicture += 1
        try await push(frame, to: video)
      } else {
        let frame = DecodedFrame(
          track: audio.id, time: .microseconds(Int64(nextSample) * 1_000_000 / 48_000),
          duration: .microseconds(1024 * 1_000_000 / 48_000), frame: try RecorderFixtures.tone(first: nextSample))
        nextSample += 1024
        try await push(frame, to: audio)
      }
    }
  }

  private func push(_ frame: DecodedFrame, to track: MediaTrack) async throws {
    guard !track.push(frame) else { return }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in track.whenRoom { done.resume() } }
  }

  func end() {
    video.end()
    audio.end()
  }
}

extension MediaTime {
  /// `microseconds` as a time (tests' shorthand).
  static func microseconds(_ value: Int64) -> MediaTime { MediaTime(microseconds: value) }
}

/// Whichever comes first of a value and the tests' deadline.
@MainActor
private final class FirstOf {
  private var done = false
  func claim() -> Bool {
    defer { done = true }
    return !done
  }
}

/// Runs `start`, which hands a value to its argument once; waits for it up to the tests' deadline.
@MainActor
func withinDeadline<Value: Sendable>(
  _ what: String, _ start: (@escaping @MainActor (Value) -> Void) -> Void
) async throws -> Value {
  try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
    let first = FirstOf()
    let timer = Task { @MainActor in
      try? await Task.sleep(for: testDeadline)
      if first.claim() { continuation.resume(throwing: WaitTimedOut(what)) }
    }
    start { value in
      guard first.claim() else { return }
      timer.cancel()
      continuation.resume(returning: value)
    }
  }
}

@MainActor
extension TrackRecorder {
  /// Stops and waits for the completion (up to the tests' deadline).
  func stopAndWait() async throws -> RecordingFileInfo? {
    try await withinDeadline("a recording's completion") { finish in self.stopRecording { finish($0) } }
  }

  /// Waits until the state is `state` (up to the tests' deadline), following ``changes``.
  func wait(until state: RecorderState) async throws {
    guard self.state != state else { return }
    let stream = changes
    _ = try await withinDeadline("the recorder to be \(state)") { (finish: @escaping @MainActor (Bool) -> Void) in
      Task { @MainActor in
        for await next in stream where next == state {
          finish(true)
          return
        }
      }
    }
  }
}
