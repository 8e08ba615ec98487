import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// An exact cut's re-encoded edge keeps to the H.264 profile and level of the stream it joins: a
/// player that sizes its decoder by the sample entry (whose first SPS is the edge's) sees the stream's.
@Suite("Exact cuts keep the stream's profile")
struct ExactCutProfileTests {
  @Test(
    "Constrained Baseline, Main and High at level 3.0 stay what they were", arguments: ["baseline", "main", "high"])
  func profileAndLevelKept(_ profile: String) throws {
    let directory = try TemporaryDirectory()
    let file = directory.url.appendingPathComponent("\(profile).mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4", "-c:v", "libx264",
        "-profile:v", profile, "-level", "3.0", "-g", "50", "-pix_fmt", "yuv420p", file.path,
      ])
    let described = { (url: URL) throws -> String in
      try run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=profile,level", "-of", "csv=p=0", url.path])
        .trimmingCharacters(in: .whitespacesAndNewlines)
    }
    let video = try #require(try MediaFileSource.probe(path: file.path).video)
    let output = directory.url.appendingPathComponent("cut.mp4")
    let job = try ExportJob(
      request: .init(
        range: MediaRange(
          start: try video.range.start + .microseconds(1_100_000), end: try video.range.start + .microseconds(3_300_000)
        ),
        videoTrack: TrackID(.video, channel: 0), audioTrack: nil, output: output, cut: .exact),
      packets: MediaFileSource(path: file.path), completion: { _ in })
    let result = try job.resultWithinDeadline()
    #expect(result.code == .ok, "\(result.message ?? "")")
    #expect(try described(output) == described(file), "\(profile)")
    #expect(try described(output).hasSuffix(",30"))
    let errors = try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"])
    #expect(errors.isEmpty, "\(profile): \(errors)")
  }

  @Test(
    "an exact cut's re-encoded edge shows its pictures as the stream does: anamorphic pixels, full range, the colours",
    arguments: ["sar", "full-range"])
  func signalKept(_ kind: String) throws {
    let directory = try TemporaryDirectory()
    let file = directory.url.appendingPathComponent("\(kind).mp4")
    let look =
      kind == "sar"
      ? [
        "-vf", "setsar=4/3", "-pix_fmt", "yuv420p", "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace",
        "bt709",
      ]
      : ["-pix_fmt", "yuvj420p"]
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4", "-c:v", "libx264", "-g",
        "50",
      ]
        + look + [file.path])
    let video = try #require(try MediaFileSource.probe(path: file.path).video)
    let output = directory.url.appendingPathComponent("cut.mp4")
    let job = try ExportJob(
      request: .init(
        range: MediaRange(
          start: try video.range.start + .microseconds(1_100_000), end: try video.range.start + .microseconds(3_300_000)
        ),
        videoTrack: TrackID(.video, channel: 0), audioTrack: nil, output: output, cut: .exact),
      packets: MediaFileSource(path: file.path), completion: { _ in })
    let result = try job.resultWithinDeadline()
    #expect(result.code == .ok, "\(result.message ?? "")")
    // Every picture, the re-encoded ones first, says what the file's say.
    let frames = { (url: URL) throws -> [String] in
      let data = try runForData(
        "/usr/bin/ffprobe",
        [
          "-v", "error", "-select_streams", "v", "-show_entries",
          "frame=sample_aspect_ratio,color_range,color_primaries,color_transfer,color_space", "-of", "json", url.path,
        ])
      let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
      let list = object?["frames"] as? [[String: Any]] ?? []
      // Square pixels said or unsaid are the same to a player (the edge says nothing of square ones).
      return list.map { frame in
        ["sample_aspect_ratio", "color_range", "color_primaries", "color_transfer", "color_space"].map {
          frame[$0] as? String ?? ($0 == "sample_aspect_ratio" ? "1:1" : "-")
        }.joined(separator: ",")
      }
    }
    let given = Set(try frames(file))
    let cut = try frames(output)
    #expect(given.count == 1, "\(given)")
    #expect(abs(cut.count - 55) <= 1 && Set(cut) == given, "\(cut.count) pictures: \(Set(cut)) vs \(given)")
  }
}
