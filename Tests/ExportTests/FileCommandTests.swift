import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// `tipipe probe` and `tipipe export --input` (spec/cli.md, "Local media files") as a script drives them.
@Suite("tipipe probe and export --input")
struct FileCommandTests {
  struct ProbeOutput: Decodable {
    struct Track: Decodable {
      var index: Int
      var kind: String
      var codec: String
      var width: Int?
      var fps: Double?
      var b_frames: Bool?
      var sample_rate: Int?
      var channels: Int?
      var frames: Int?
    }
    var duration_s: Double
    var start_s: Double
    var tracks: [Track]
    var keyframes_s: [Double]
  }

  struct ReportOutput: Decodable {
    struct Range: Decodable {
      var start_ms: Int64
      var end_ms: Int64
    }
    struct Segment: Decodable { var source_range: Range }
    struct Track: Decodable { var kind: String }
    struct Gap: Decodable {
      var range: Range
      var tracks: [Track]
      var reasons: [String]
    }
    struct Report: Decodable {
      var requested_range: Range
      var segments: [Segment]
      var gaps: [Gap]
      var complete: Bool
      var covered_duration_ms: Int64
      var termination: String?
      var unprocessed_ranges: [Range]?
    }
    var code: Int32
    var file: String?
    var report: Report
  }

  @Test("probe --json: spec/cli.md's object; seconds from the file's start")
  func probeJSON() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "ts", codec: "h264", bFrames: true), in: directory.url)
    let finished = try tipipe(["probe", file.path, "--json"])
    #expect(finished.status == 0, "\(finished.stderr)")
    let probe = try JSONDecoder().decode(ProbeOutput.self, from: Data(finished.stdout.utf8))
    #expect(abs(probe.duration_s - 6) < 0.1)
    #expect(probe.start_s > 1)  // MPEG-TS starts at its own clock
    let video = try #require(probe.tracks.first { $0.kind == "video" })
    #expect(video.codec == "h264" && video.width == 320 && video.b_frames == true && video.fps == 25)
    let audio = try #require(probe.tracks.first { $0.kind == "audio" })
    #expect(audio.codec == "aac" && audio.sample_rate == 44100 && audio.channels == 1)
    // The video starts a little after the audio: its keyframes are 2 s apart from there.
    #expect(probe.keyframes_s.count == 3)
    #expect(zip(probe.keyframes_s, probe.keyframes_s.dropFirst()).allSatisfy { abs($1 - $0 - 2) < 0.001 })
  }

  @Test("probe: a missing file, a directory, a device and a file that is not media are exit 1 with one error line")
  func probeRefuses() throws {
    let directory = try TemporaryDirectory()
    let text = directory.url.appendingPathComponent("notes.txt")
    try Data("not media".utf8).write(to: text)
    for (path, name) in [
      (directory.url.appendingPathComponent("missing.mp4").path, "recordingNotFound"),
      (directory.url.path, "recordingUnreadable"), ("/dev/zero", "recordingUnreadable"),
      (text.path, "recordingUnreadable"),
    ] {
      let finished = try tipipe(["probe", path])
      #expect(finished.status == 1, "\(path): \(finished.stderr)")
      #expect(finished.stderr.hasPrefix("error: \(name) ("), "\(path): \(finished.stderr)")
      #expect(finished.stderr.split(separator: "\n").count == 1, "\(path): \(finished.stderr)")
    }
    #expect(try tipipe(["probe"]).status == 2)
    #expect(try tipipe(["probe", "a", "b"]).status == 2)
  }

  @Test("export --input: times in seconds from the file's start, keyframe and exact cuts, the report relative")
  func exportInput() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), in: directory.url)
    let out = directory.url.appendingPathComponent("cut.mp4")
    for (cut, expectedStart) in [("keyframe", Int64(2_000)), ("exact", Int64(2_500))] {
      let finished = try tipipe([
        "export", "--input", file.path, "--start", "2.5", "--end", "0:04.5", "--out", out.path, "--cut", cut,
        "--report", "-",
      ])
      #expect(finished.status == 0, "\(cut): \(finished.stderr)")
      let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
      #expect(output.code == 0 && output.file == out.path)
      #expect(output.report.requested_range.start_ms == 2_500 && output.report.requested_range.end_ms == 4_500)
      #expect(output.report.segments.first?.source_range.start_ms == expectedStart, "\(cut)")
      #expect(output.report.complete)
      let judged = try MediaFileExportTests.judge(out)
      #expect(abs(judged.videoDuration - Double(4_500 - expectedStart) / 1000) < 0.002, "\(cut)")
    }
    // --end defaults to the end of the video.
    let whole = try tipipe(["export", "--input", file.path, "--start", "0", "--out", out.path, "--report", "-"])
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(whole.stdout.utf8))
    #expect(output.report.requested_range.end_ms == 6_000 && output.report.complete)
  }

  @Test(
    "export --input --start 0 of a remux to MKV, MPEG-TS, FLV or fragmented MP4 (the AAC priming a sound ahead of the picture) is complete, from the first picture",
    arguments: ["mkv", "ts", "flv", "fragmented"])
  func remuxFromTheStartIsComplete(container: String) throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), in: directory.url)
    let remux = directory.url.appendingPathComponent("remux.\(container == "fragmented" ? "mp4" : container)")
    let movflags = container == "fragmented" ? ["-movflags", "frag_keyframe+empty_moov"] : []
    _ = try run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", source.path, "-c", "copy"] + movflags + [remux.path])
    let info = try MediaFileSource.probe(path: remux.path)
    let video = try #require(info.video)
    let lead = (try video.range.start - info.start).microseconds / 1000
    try #require(lead > 0, "the remux's picture starts with its sound: nothing to check")
    let out = directory.url.appendingPathComponent("out.mp4")
    let finished = try tipipe(["export", "--input", remux.path, "--start", "0", "--out", out.path, "--report", "-"])
    #expect(finished.status == 0 && !finished.stderr.contains("warning"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    #expect(output.report.complete, "\(output.report)")
    #expect(output.report.requested_range.start_ms == lead, "\(output.report.requested_range) (picture at \(lead) ms)")
    #expect(abs(output.report.covered_duration_ms - 6_000) <= 1, "\(output.report.covered_duration_ms)")
    #expect(try MediaFileExportTests.judge(out).videoFrames == 150)
  }

  @Test(
    "export --input of a file whose sound starts seconds before its picture: the file from the picture, the report's range the one asked (E20) with the stretch before the picture a gap, and a warning says so"
  )
  func soundAloneBeforeThePictureIsSaid() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), in: directory.url)
    let late = directory.url.appendingPathComponent("late-picture.mkv")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-i", source.path, "-itsoffset", "3", "-i", source.path, "-map", "1:v", "-map", "0:a",
        "-c", "copy", late.path,
      ])
    let out = directory.url.appendingPathComponent("out.mp4")
    let finished = try tipipe(["export", "--input", late.path, "--start", "0", "--out", out.path, "--report", "-"])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(
      finished.stderr.hasPrefix("warning: the export starts at the file's first picture (3.0")
        && finished.stderr.contains("the 3.0"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    #expect(output.report.requested_range.start_ms == 0, "\(output.report.requested_range)")
    #expect(!output.report.complete)
    let head = try #require(output.report.gaps.first, "\(output.report)")
    #expect(head.range.start_ms == 0 && abs(head.range.end_ms - 3_000) <= 30, "\(head.range)")
    #expect(Set(head.tracks.map(\.kind)) == ["video", "audio"] && head.reasons == ["noRecording"], "\(head)")
    #expect(abs(try MediaFileExportTests.judge(out).videoDuration - 6) < 0.05, "the picture, all of it")
    let quiet = try tipipe(["export", "--input", late.path, "--start", "0", "--out", out.path, "--quiet"])
    #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
  }

  @Test(
    "a file cut without re-encoding: probe lists the keyframes it shows and the pictures ffmpeg decodes; a keyframe export from its start re-encodes the part of the group it shows, never a hidden picture"
  )
  func editListCutFile() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), seconds: 8, in: directory.url)
    // Cut at 1.5 s inside the group from 0 s (2 s groups): the edit list hides 0–1.5 s.
    let trimmed = directory.url.appendingPathComponent("trimmed.mp4")
    try cutWithoutReencoding(source.path, to: trimmed.path)
    let shown = try #require(
      Int(
        try run(
          "/usr/bin/ffprobe",
          [
            "-v", "error", "-select_streams", "v", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of",
            "csv=p=0", trimmed.path,
          ]
        ).trimmingCharacters(in: .whitespacesAndNewlines)))
    let probed = try tipipe(["probe", trimmed.path, "--json"])
    let described = try JSONDecoder().decode(ProbeOutput.self, from: Data(probed.stdout.utf8))
    #expect(described.keyframes_s.allSatisfy { $0 >= 0 }, "\(described.keyframes_s)")
    #expect(described.tracks.first { $0.kind == "video" }?.frames == shown, "\(described.tracks)")
    let out = directory.url.appendingPathComponent("out.mp4")
    let finished = try tipipe(["export", "--input", trimmed.path, "--start", "0", "--out", out.path, "--report", "-"])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.hasPrefix("note: the file starts inside a group of pictures"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    #expect(output.report.complete && output.report.segments.first?.source_range.start_ms == 0, "\(output.report)")
    #expect(try MediaFileExportTests.judge(out).videoFrames == shown)
    // Its first picture is the file's first shown one.
    #expect(try MediaFileExportTests.firstPicturePSNR(out, against: trimmed, at: 0) > 35)
    // A cut shorter than its group: the file shows no keyframe at all, and is cut exactly too.
    let long = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), seconds: 6, extra: ["-g", "250"], in: directory.url)
    let short = directory.url.appendingPathComponent("short.mp4")
    try cutWithoutReencoding(long.path, to: short.path)
    let whole = try tipipe(["export", "--input", short.path, "--start", "0", "--out", out.path, "--report", "-"])
    #expect(whole.status == 0 && whole.stderr.hasPrefix("note: "), "\(whole.stderr)")
    let shortShown = try MediaFileExportTests.judge(short).videoFrames
    #expect(try MediaFileExportTests.judge(out).videoFrames == shortShown, "of \(shortShown)")
  }

  @Test(
    "a 10-bit file cut without re-encoding, exported from its start at a keyframe: the exact cut it would need is refused, so the keyframe cut asked for is made from the hidden keyframe, said"
  )
  func editListCutOfATenBitFile() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), seconds: 4, extra: ["-pix_fmt", "yuv420p10le"],
      in: directory.url)
    let trimmed = directory.url.appendingPathComponent("trimmed.mp4")
    try cutWithoutReencoding(source.path, to: trimmed.path)
    let out = directory.url.appendingPathComponent("out.mp4")
    let finished = try tipipe(["export", "--input", trimmed.path, "--start", "0", "--out", out.path, "--report", "-"])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.contains("warning: ") && finished.stderr.contains("hides"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    #expect(output.report.complete, "\(output.report)")
    // From the hidden keyframe at 0 s of the source (1.5 s before the file's start).
    let first = output.report.segments.first?.source_range.start_ms ?? 0
    #expect((-1_560)...(-1_440) ~= first, "\(output.report.segments)")
  }

  @Test("export --input names the end that is wrong: --start past the video's end, --end before its first picture")
  func rangeOutsideThePictureIsSaid() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), seconds: 4, in: directory.url)
    // Picture 5–9 s, sound 0–4 s.
    let late = directory.url.appendingPathComponent("late-picture.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-i", source.path, "-itsoffset", "5", "-i", source.path, "-map", "1:v", "-map", "0:a",
        "-c", "copy", late.path,
      ])
    let out = directory.url.appendingPathComponent("out.mp4").path
    let past = try tipipe(["export", "--input", late.path, "--start", "9.5", "--out", out])
    #expect(past.status == 2)
    #expect(past.stderr.contains("at or after the end of the file's video (9.0"), "\(past.stderr)")
    let before = try tipipe(["export", "--input", late.path, "--start", "0", "--end", "4", "--out", out])
    #expect(before.status == 2)
    #expect(before.stderr == "tipipe: --end is at or before the file's first picture (5.000 s)\n", "\(before.stderr)")
    #expect(!FileManager.default.fileExists(atPath: out))
  }

  @Test("E13 with --input: the last --progress-lines covered_ms is the report's, and progress reaches 1")
  func progressLinesEndWithTheReport() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), in: directory.url)
    for (start, cut) in [("0", "keyframe"), ("2.5", "exact"), ("1.3", "keyframe")] {
      let finished = try tipipe([
        "export", "--input", file.path, "--start", start, "--out", directory.url.appendingPathComponent("p.mp4").path,
        "--cut", cut, "--report", "-", "--progress-lines",
      ])
      #expect(finished.status == 0, "\(finished.stderr)")
      let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
      let lines = finished.stderr.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
      }
      let covered = lines.compactMap { ($0["covered_ms"] as? NSNumber)?.int64Value }
      let progress = lines.compactMap { ($0["progress"] as? NSNumber)?.doubleValue }
      #expect(covered == covered.sorted() && progress == progress.sorted(), "\(start) \(cut): \(lines)")
      #expect(covered.last == output.report.covered_duration_ms, "\(start) \(cut): \(covered) vs the report")
      #expect(progress.last == 1)
    }
  }

  @Test("export --input of a file whose sound is MP3: the picture is written, the sound's absence reported")
  func exportInputWithSoundItCannotCarry() throws {
    let directory = try TemporaryDirectory()
    let file = directory.url.appendingPathComponent("mp3.mov")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=6", "-f", "lavfi", "-i",
        "sine=sample_rate=44100:duration=6", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "libmp3lame",
        file.path,
      ])
    let out = directory.url.appendingPathComponent("cut.mp4")
    let finished = try tipipe(["export", "--input", file.path, "--start", "1", "--out", out.path, "--report", "-"])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.contains("mp3"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    // Not complete: the sound is one gap over the range, unsupportedMedia; the picture all there.
    #expect(!output.report.complete)
    #expect(output.report.gaps.count == 1)
    let gap = try #require(output.report.gaps.first)
    #expect(gap.tracks.map(\.kind) == ["audio"] && gap.reasons == ["unsupportedMedia"])
    #expect(gap.range.start_ms == 1_000 && gap.range.end_ms == 6_000)
    let streams = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", out.path])
    #expect(streams.split(separator: "\n") == ["h264"])
    // probe describes the sound it does not read as the file declares it.
    let probe = try tipipe(["probe", file.path])
    #expect(
      probe.stdout.contains("mp3 44100 Hz, 1 channel(s)") && probe.stdout.contains("(not read)"), "\(probe.stdout)")
  }

  @Test(
    "export --input of an MP4 with bad bytes in some pictures: they are skipped and said, the rest of the range exported, as ffmpeg reads on"
  )
  func exportInputSkipsDamagedPictures() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), seconds: 10, extra: ["-movflags", "+faststart"],
      in: directory.url)
    // Three pictures 5 s in overwritten with noise, where ffprobe says they lie: their NAL unit lengths
    // make no sense (reading them had ended the export there, "interrupted", exit 0 and no word).
    let packets = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pos,size", "-of", "csv=p=0", source.path]
    ).split(separator: "\n").compactMap { line -> (size: Int, position: Int)? in
      let fields = line.split(separator: ",").compactMap { Int($0) }
      return fields.count == 2 ? (fields[0], fields[1]) : nil
    }
    try #require(packets.count == 250)
    var bytes = [UInt8](try Data(contentsOf: source))
    var state: UInt64 = 7
    for packet in packets[126..<129] {
      for index in packet.position..<packet.position + packet.size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
      }
    }
    let damaged = directory.url.appendingPathComponent("damaged.mp4")
    try Data(bytes).write(to: damaged)
    let out = directory.url.appendingPathComponent("out.mp4")
    let finished = try tipipe([
      "export", "--input", damaged.path, "--start", "3", "--end", "8", "--out", out.path, "--report", "-",
    ])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.contains("warning: 3 damaged packets were skipped"), "\(finished.stderr)")
    let output = try JSONDecoder().decode(ReportOutput.self, from: Data(finished.stdout.utf8))
    #expect(
      output.report.termination == "exhausted" && output.report.unprocessed_ranges?.isEmpty == true,
      "\(output.report)")
    #expect(output.report.segments.last?.source_range.end_ms == 8_000, "\(output.report)")
    // The file holds the range to its end: the pictures after the damage, and the sound throughout.
    let judged = try MediaFileExportTests.judge(out)
    #expect(judged.videoFrames >= 147 && judged.videoDuration > 5.9, "\(judged)")
    #expect((judged.audioDuration ?? 0) > 5.9, "\(judged)")
  }

  @Test(
    "export --input --cut exact of a group of pictures with bad bytes inside two pictures' data: the decoder's refusals cost those pictures, not the cut (exit 0), as the keyframe cut copies on"
  )
  func exactCutOverDamagedPictures() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: true), seconds: 8, in: directory.url)
    // The middle half of two pictures 2.4 s in (decode order) overwritten with noise: their NAL unit
    // lengths stand, their slices do not decode (an exact cut from 2.1 s decodes the group from 2 s).
    let packets = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pos,size", "-of", "csv=p=0", source.path]
    ).split(separator: "\n").compactMap { line -> (size: Int, position: Int)? in
      let fields = line.split(separator: ",").compactMap { Int($0) }
      return fields.count == 2 ? (fields[0], fields[1]) : nil
    }
    try #require(packets.count == 200)
    var bytes = [UInt8](try Data(contentsOf: source))
    var state: UInt64 = 11
    for packet in packets[60..<62] {
      for index in packet.position + packet.size / 4..<packet.position + packet.size * 3 / 4 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
      }
    }
    let damaged = directory.url.appendingPathComponent("damaged.mp4")
    try Data(bytes).write(to: damaged)
    for cut in ["keyframe", "exact"] {
      let out = directory.url.appendingPathComponent("\(cut).mp4")
      let finished = try tipipe([
        "export", "--input", damaged.path, "--start", "2.1", "--end", "6", "--cut", cut, "--out", out.path,
      ])
      #expect(finished.status == 0, "\(cut): \(finished.stderr)")
      let judged = try MediaFileExportTests.judge(out)
      // 3.9 s of pictures (exact) or 4 s (keyframe), less those the damage costs.
      #expect(judged.videoFrames >= 90 && judged.videoDuration > 3.8, "\(cut): \(judged)")
    }
  }

  @Test(
    "export --input --cut keyframe of a range inside a hole of a variable-frame-rate file: no picture in it, so no file (it had written its group's pictures from before the range)"
  )
  func rangeInsideAHoleHasNoPicture() throws {
    let directory = try TemporaryDirectory()
    let file = directory.url.appendingPathComponent("vfr.mp4")
    // Pictures 10–30 of every 50 left out: none between 0.40 and 1.24 s, 2.40 and 3.24 s…
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25", "-t", "6", "-vf",
        "select='not(between(mod(n\\,50)\\,10\\,30))'", "-fps_mode", "vfr", "-c:v", "libx264", "-g", "50",
        file.path,
      ])
    let out = directory.url.appendingPathComponent("out.mp4")
    // (An exact cut re-encodes the picture before the hole lasting until the next one: it holds it over the
    // range — a known difference between the cuts over holes.)
    for cut in ["keyframe"] {
      let inside = try tipipe([
        "export", "--input", file.path, "--start", "2.45", "--end", "3.0", "--cut", cut, "--out", out.path,
      ])
      #expect(
        inside.status == 1 && inside.stderr.hasPrefix("error: noRecordableMedia (6119)"), "\(cut): \(inside.stderr)")
      #expect(!FileManager.default.fileExists(atPath: out.path), "\(cut)")
    }
    // A range the pictures reach is exported.
    let reached = try tipipe(["export", "--input", file.path, "--start", "2.3", "--end", "3.0", "--out", out.path])
    #expect(reached.status == 0, "\(reached.stderr)")
  }

  @Test(
    "export --out with a long legal name (250 bytes) is written: its temporary file's name stays within 255 bytes, and a dead writer's is still found"
  )
  func longOutputName() throws {
    let directory = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), seconds: 2, in: directory.url)
    let name = String(repeating: "é", count: 100) + String(repeating: "b", count: 46) + ".mp4"
    #expect(name.utf8.count == 250)
    let out = directory.url.appendingPathComponent(name)
    let finished = try tipipe(["export", "--input", source.path, "--start", "0", "--out", out.path])
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(try MediaFileExportTests.judge(out).videoFrames == 50)
    let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasPrefix(".") }
    #expect(left.isEmpty, "\(left)")
    // The temporary name: within NAME_MAX, and a dead writer's is removed by the next writer of the file.
    let working = URL(fileURLWithPath: OutputFile.workingPath(for: out)).lastPathComponent
    #expect(working.utf8.count <= 255, "\(working.utf8.count) bytes")
    // A pid above Linux's largest (2^22): no process has it, now or later.
    let stale = directory.url.appendingPathComponent(
      working.replacingOccurrences(of: ".\(getpid()).", with: ".\(4_194_305)."))
    #expect(FileManager.default.createFile(atPath: stale.path, contents: Data()))
    OutputFile.removeStaleWorkingFiles(besides: out)
    #expect(!FileManager.default.fileExists(atPath: stale.path))
  }

  @Test("export --input refuses bad times, a bad cut and writing over its input (usage errors, nothing written)")
  func exportInputRefuses() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), in: directory.url)
    let out = directory.url.appendingPathComponent("out.mp4")
    let bad: [[String]] = [
      ["--start", "-1"], ["--start", "1:75"], ["--start", "abc"], ["--start", "3", "--end", "2"],
      ["--start", "1", "--cut", "smart"], ["--start", "1.1234567"], ["--start", "99999999999999999999"],
      // Less than a millisecond apart: the report (in ms) would say an empty range.
      ["--start", "2.5", "--end", "2.5004"], ["--start", "2.5", "--end", "2.5009", "--cut", "exact"],
      // Less than a millisecond before the end of the video (6 s).
      ["--start", "5.9995"], ["--start", "5.999999", "--cut", "exact"], ["--start", "5.9999", "--end", "9"],
    ]
    for flags in bad {
      let finished = try tipipe(["export", "--input", file.path, "--out", out.path] + flags)
      #expect(finished.status == 2, "\(flags): \(finished.stderr)")
      if flags.contains("2.5004") { #expect(finished.stderr.contains("by 1 ms at least"), "\(finished.stderr)") }
    }
    let overwrite = try tipipe(["export", "--input", file.path, "--start", "1", "--out", file.path])
    #expect(overwrite.status == 2, "\(overwrite.stderr)")
    #expect(!FileManager.default.fileExists(atPath: out.path))
    #expect(try MediaFileSource.probe(path: file.path).video?.packets == 150, "the input is intact")
    // A start past the end of the video.
    let late = try tipipe(["export", "--input", file.path, "--start", "60", "--out", out.path])
    #expect(late.status == 2, "\(late.stderr)")
    // A library export's flag is not "unknown": it is one an export of a file does not take.
    for flag in [["--video-channel", "0"], ["--endpoint", "file:///x"], ["--token", "t"]] {
      let library = try tipipe(["export", "--input", file.path, "--start", "1", "--out", out.path] + flag)
      #expect(
        library.status == 2 && library.stderr.contains("\(flag[0]) is for an export of a library"),
        "\(library.stderr)")
    }
  }

  @Test("hostile runs: --report naming the input, an exact cut of 4:4:4 or odd-sized video, a start in the last frame")
  func hostileRuns() throws {
    let directory = try TemporaryDirectory()
    let file = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), in: directory.url)
    let out = directory.url.appendingPathComponent("out.mp4")
    // --report must not replace the input (found by a hostile run: the video was overwritten by JSON).
    let report = try tipipe([
      "export", "--input", file.path, "--start", "0", "--end", "2", "--out", out.path, "--report", file.path,
    ])
    #expect(report.status == 2, "\(report.stderr)")
    #expect(try MediaFileSource.probe(path: file.path).video?.packets == 150, "the input is intact")
    // An exact cut re-encodes 8-bit 4:2:0 of even size only: anything else is refused, not mixed in.
    for (size, format) in [("320x240", "yuv444p"), ("321x241", "yuv444p"), ("320x240", "yuv420p10le")] {
      let odd = directory.url.appendingPathComponent("\(size)-\(format).mp4")
      _ = try run(
        "/usr/bin/ffmpeg",
        [
          "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=25", "-t", "4", "-c:v", "libx264",
          "-pix_fmt", format, "-g", "25", odd.path,
        ])
      let exact = try tipipe([
        "export", "--input", odd.path, "--start", "1.3", "--end", "3.3", "--cut", "exact", "--out", out.path,
      ])
      #expect(exact.status == 1 && exact.stderr.hasPrefix("error: unsupportedFormat ("), "\(format): \(exact.stderr)")
      #expect(!FileManager.default.fileExists(atPath: out.path), "\(format)")
      let keyframe = try tipipe(["export", "--input", odd.path, "--start", "1.3", "--end", "3.3", "--out", out.path])
      #expect(keyframe.status == 0, "\(format): \(keyframe.stderr)")
      try? FileManager.default.removeItem(at: out)
    }
    // A start inside the last frame's duration: that frame is shown at the start.
    for cut in ["keyframe", "exact"] {
      let last = try tipipe([
        "export", "--input", file.path, "--start", "5.97", "--cut", cut, "--out", out.path, "--report", "-",
      ])
      #expect(last.status == 0, "\(cut): \(last.stderr)")
      let output = try JSONDecoder().decode(ReportOutput.self, from: Data(last.stdout.utf8))
      #expect(output.report.segments.first?.source_range.start_ms == (cut == "exact" ? 5_970 : 4_000), "\(cut)")
    }
  }
}
