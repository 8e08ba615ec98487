import Foundation
import MediaTestSupport
import Testing

/// `tipipe thumbnails` (issue 26, scrub previews) from outside: the sprite judged by ffmpeg against the
/// same moments of an export of the range, the WebVTT index read as a player reads it.
@Suite struct ThumbnailsCommandTests {
  @Test func aSpriteOfKeyframesWithItsIndexAndAGapLeftOut() throws {
    let directory = try TemporaryDirectory("thumbnails")
    let library = directory.url.appendingPathComponent("library")
    let start: Int64 = 1_700_000_000_000
    // 20 s, a keyframe every 2 s (25 fps, GOP 50), nothing recorded from 8 s to 12 s.
    let synth = try tipipe([
      "synth", "--out", library.path, "--start", "\(start)", "--duration", "20", "--size", "640x360", "--gap", "8:4",
      "--quiet",
    ])
    try #require(synth.status == 0, "\(synth.stderr)")
    let endpoint = "file://" + library.path
    let range = ["--start", "\(start)", "--end", "\(start + 20_000)", "--video-channel", "0"]
    let out = directory.url.appendingPathComponent("previews")
    let done = try tipipe(["thumbnails", "--endpoint", endpoint] + range + ["--every", "2", "--out", out.path])
    try #require(done.status == 0, "\(done.stderr)")
    let line = try #require(
      try JSONSerialization.jsonObject(with: Data(done.stdout.utf8)) as? [String: Any], "\(done.stdout)")
    #expect(line["thumbnails"] as? Int == 8 && line["cues"] as? Int == 10, "\(line)")
    // The index: one cue per tile, in order, the gap's two cues absent.
    let index = try String(contentsOf: out.appendingPathComponent("thumbnails.vtt"), encoding: .utf8)
    #expect(index.hasPrefix("WEBVTT\n"))
    let cues = index.components(separatedBy: "\n\n").dropFirst().map { $0.split(separator: "\n").map(String.init) }
    #expect(cues.count == 8)
    #expect(cues.first == ["00:00:00.000 --> 00:00:02.000", "thumbnails.jpg#xywh=0,0,160,90"])
    #expect(!index.contains("00:00:08.000 -->") && !index.contains("00:00:10.000 -->"))
    #expect(cues.last == ["00:00:18.000 --> 00:00:20.000", "thumbnails.jpg#xywh=1440,0,160,90"])
    // The sprite: 10 tiles in a row; each tile is the picture at its cue's start, as ffmpeg shows it
    // in an export of the same range; the gap's tiles are black.
    let sprite = out.appendingPathComponent("thumbnails.jpg")
    let exported = directory.url.appendingPathComponent("range.mp4")
    let export = try tipipe(["export", "--endpoint", endpoint] + range + ["--out", exported.path, "--quiet"])
    try #require(export.status == 0, "\(export.stderr)")
    for cue in [0, 1, 3, 6, 9] {
      let tile = try ffmpegLuma(of: sprite, crop: (cue * 160, 0, 160, 90), width: 160, height: 90)
      // The export starts at the range's start and closes the gap up: after it, 4 s earlier.
      let seconds = Double(cue * 2 - (cue >= 6 ? 4 : 0))
      let reference = try ffmpegLuma(of: exported, at: seconds, width: 160, height: 90)
      #expect(lumaPSNR(tile, reference) >= 35, "cue \(cue): \(lumaPSNR(tile, reference)) dB")
    }
    for cue in [4, 5] {
      let tile = try ffmpegLuma(of: sprite, crop: (cue * 160, 0, 160, 90), width: 160, height: 90)
      #expect(tile.allSatisfy { $0 < 24 }, "cue \(cue) is black")
    }
  }

  /// 3-second objects, a cue every 6 s from 1 s, a keyframe every `gop` frames at 25 fps; each cue shows
  /// the first keyframe at or after its start (at `seconds`).
  @Test(arguments: [(gop: 100, seconds: [4.0, 8, 16, 20]), (gop: 75, seconds: [3.0, 9, 15, 21])])
  func eachCueShowsTheFirstKeyframeAfterItsStartWhateverItsObject(gop: Int, seconds: [Double]) throws {
    let directory = try TemporaryDirectory("thumbnails-second-pass")
    let library = directory.url.appendingPathComponent("library")
    let start: Int64 = 1_700_000_000_000
    // Every 4 s: the objects holding 1 s and 13 s have no keyframe after them, and the keyframe of those
    // cues is in the next object (4 s, 16 s). Every 3 s: the object holding the next cue's start begins
    // with a keyframe inside this cue (6 s), but a skipped object holds an earlier one (3 s).
    let synth = try tipipe([
      "synth", "--out", library.path, "--start", "\(start)", "--duration", "24", "--segment-seconds", "3",
      "--gop", "\(gop)", "--size", "640x360", "--audio", "none", "--quiet",
    ])
    try #require(synth.status == 0, "\(synth.stderr)")
    let endpoint = "file://" + library.path
    let out = directory.url.appendingPathComponent("previews")
    let done = try tipipe([
      "thumbnails", "--endpoint", endpoint, "--start", "\(start + 1_000)", "--end", "\(start + 25_000)",
      "--video-channel", "0", "--every", "6", "--out", out.path,
    ])
    try #require(done.status == 0, "\(done.stderr)")
    #expect(done.stdout.contains("\"thumbnails\":4,\"cues\":4"), "\(done.stdout)")
    let sprite = out.appendingPathComponent("thumbnails.jpg")
    let exported = directory.url.appendingPathComponent("all.mp4")
    let export = try tipipe([
      "export", "--endpoint", endpoint, "--start", "\(start)", "--end", "\(start + 24_000)", "--video-channel", "0",
      "--out", exported.path, "--quiet",
    ])
    try #require(export.status == 0, "\(export.stderr)")
    for (cue, seconds) in seconds.enumerated() {
      let tile = try ffmpegLuma(of: sprite, crop: (cue * 160, 0, 160, 90), width: 160, height: 90)
      let match = lumaPSNR(tile, try ffmpegLuma(of: exported, at: seconds, width: 160, height: 90))
      let before = lumaPSNR(tile, try ffmpegLuma(of: exported, at: seconds - 1, width: 160, height: 90))
      #expect(match >= 35 && match > before + 3, "cue \(cue): \(match) dB, a second earlier \(before) dB")
    }
  }

  @Test func hostileArgumentsAreOneLineAndWriteNothing() throws {
    let directory = try TemporaryDirectory("thumbnails-hostile")
    let library = directory.url.appendingPathComponent("library")
    let start: Int64 = 1_700_000_000_000
    try #require(
      try tipipe(["synth", "--out", library.path, "--start", "\(start)", "--duration", "4", "--quiet"]).status == 0)
    let out = directory.url.appendingPathComponent("out")
    let base = [
      "thumbnails", "--endpoint", "file://" + library.path, "--video-channel", "0", "--out", out.path,
    ]
    let whole = ["--start", "\(start)", "--end", "\(start + 4_000)"]
    for extra in [
      whole + ["--every", "0"], whole + ["--every", "-1"], whole + ["--every", "1", "--width", "7"],
      whole + ["--every", "1", "--columns", "0"],
      ["--start", "\(start)", "--end", "\(start + 86_400_000 * 30)", "--every", "1"],
      ["--start", "\(start)", "--end", "\(start)", "--every", "1"],
    ] {
      let done = try tipipe(base + extra)
      #expect(done.status == 2, "\(extra): \(done.stderr)")
      #expect(done.stderr.split(separator: "\n").count == 1, "\(extra): \(done.stderr)")
      // A period, not a time of a file (there is none).
      if extra.contains("-1") { #expect(done.stderr.contains("--every must be a period in seconds"), "\(done.stderr)") }
    }
    // Nothing in the range: the seed's code, and no file.
    let empty = try tipipe(base + ["--start", "\(start - 60_000)", "--end", "\(start - 1)", "--every", "1"])
    #expect(empty.status == 1 && empty.stderr.hasPrefix("error: noRecordableMedia (6119): "), "\(empty.stderr)")
    // A directory where the sprite would go is a usage error (spec/cli.md, output paths): nothing is written.
    try FileManager.default.createDirectory(
      at: out.appendingPathComponent("thumbnails.jpg"), withIntermediateDirectories: true)
    let blocked = try tipipe(base + whole + ["--every", "1"])
    #expect(blocked.status == 2, "\(blocked.stderr)")
    #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("thumbnails.vtt").path))
    var isDirectory: ObjCBool = false
    #expect(
      FileManager.default.fileExists(
        atPath: out.appendingPathComponent("thumbnails.jpg").path, isDirectory: &isDirectory)
        && isDirectory.boolValue)
  }
}
