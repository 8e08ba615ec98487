import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@Suite("tipipe bench")
struct BenchCommandTests {
  struct Figures: Decodable {
    struct Node: Decodable {
      var name: String
      var items_in: Int
      var items_out: Int
    }
    var frames: Int
    var seconds: Double
    var frames_per_second: Double
    var cpu_seconds: Double
    var nodes: [Node]
  }

  @Test("bench decode over a library range and a media file, and bench export, print their figures as JSON")
  func figures() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library)
    let range = ["--start", "\(recordingStart + 2000)", "--end", "\(recordingStart + 5000)"]
    let decode = try tipipe(
      ["bench", "decode", "--endpoint", "file://\(library.path)", "--video-channel", "0", "--json"] + range)
    #expect(decode.status == 0, "\(decode.stderr)")
    let decoded = try JSONDecoder().decode(Figures.self, from: Data(decode.stdout.utf8))
    // From the keyframe at 2 s to 5 s at 25 fps.
    #expect(decoded.frames == 75)
    #expect(decoded.seconds > 0 && decoded.cpu_seconds > 0 && decoded.frames_per_second > 0)
    #expect(
      decoded.nodes.map(\.name) == [
        "CloudSegmentSource", "SegmentVerifier", "SegmentDemuxer", "FrameDecoder", "FrameCount",
      ])
    #expect(decoded.nodes.last?.items_in == 75)

    let keyframes = try tipipe(
      ["bench", "decode", "--endpoint", "file://\(library.path)", "--video-channel", "0", "--keyframes-only", "--json"]
        + range)
    #expect(try JSONDecoder().decode(Figures.self, from: Data(keyframes.stdout.utf8)).frames == 2)

    // A media file: the export of the whole library, decoded with two threads.
    let output = directory.url.appendingPathComponent("whole.mp4")
    let export = try tipipe(
      [
        "bench", "export", "--endpoint", "file://\(library.path)", "--start", "\(recordingStart)", "--end",
        "\(recordingStart + 6000)", "--video-channel", "0", "--audio-channel", "1", "--out", output.path, "--json",
      ])
    #expect(export.status == 0, "\(export.stderr)")
    #expect(try JSONDecoder().decode(Figures.self, from: Data(export.stdout.utf8)).frames == 150)
    let file = try tipipe(["bench", "decode", "--input", output.path, "--threads", "2", "--json"])
    #expect(try JSONDecoder().decode(Figures.self, from: Data(file.stdout.utf8)).frames == 150)
  }

  @Test("bench usage errors exit 2; a failed run exits 1 with the seed's code")
  func errors() throws {
    #expect(try tipipe(["bench"]).status == 2)
    #expect(try tipipe(["bench", "play"]).status == 2)
    #expect(try tipipe(["bench", "decode", "--threads", "0", "--input", "x.mp4"]).status == 2)
    #expect(try tipipe(["bench", "decode", "--video-channel", "0", "--start", "1", "--end", "2"]).status == 2)
    let missing = try tipipe(["bench", "decode", "--input", "/nonexistent/file.mp4"])
    #expect(missing.status == 1)
    #expect(missing.stderr.hasPrefix("error: recordingNotFound (6134)"), "\(missing.stderr)")
    // A file without a picture: nothing to decode is a failure, not a rate of 0 frames.
    let directory = try TemporaryDirectory()
    let sound = directory.url.appendingPathComponent("sound.m4a")
    _ = try run(
      "/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=duration=2", "-c:a", "aac", sound.path])
    let silent = try tipipe(["bench", "decode", "--input", sound.path])
    #expect(silent.status == 1 && silent.stderr.hasPrefix("error: unsupportedFormat (6113)"), "\(silent.stderr)")
  }
}
