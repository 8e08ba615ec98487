import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

@Suite("tipipe play and snapshot as processes, on file:// and http:// endpoints")
struct PlayCommandTests {
  func library(gap: Bool = true) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 9)
    if gap { options.gaps = [(offset: 3, length: 3)] }
    try LibrarySynthesizer(options: options).write(to: directory.url)
    return directory
  }

  func lines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  @Test func playPrintsTimeGapCompletedAndSummaryLines() throws {
    let directory = try library()
    let server = try ServeProcess(root: directory.url)
    let device = try RecordingIndex.load(library: directory.url).deviceId
    let token = try tipipe(["token", "--device-id", device, "--secret", "cli-secret"]).stdout
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let range = ["--start", String(recordingStart), "--end", String(recordingStart + 9000), "--video-channel", "0"]
    var outputs: [String] = []
    for endpoint in [
      ["--endpoint", "file://\(directory.url.path)"], ["--endpoint", server.endpoint, "--token", token],
    ] {
      let result = try tipipe(["play", "--pace", "fast", "--audio-channel", "1"] + endpoint + range)
      #expect(result.status == 0, "\(result.stderr)")
      let events = lines(result.stdout)
      let names = events.compactMap { $0["event"] as? String }
      #expect(names.last == "summary")
      // The replay's completion, then (output_state) the Outputs drained.
      #expect(names.filter { $0 != "output_state" }.dropLast().last == "completed")
      let states = events.filter { $0["event"] as? String == "output_state" && $0["output"] as? String == "video" }
        .compactMap { $0["state"] as? String }
      #expect(states == ["buffering", "rendering", "completed"])
      // The hole once (R74, the position's track's gap: the audio's follows AAC's 64 ms frames), between
      // the time events around it.
      let gaps = events.filter { $0["event"] as? String == "gap" }
      #expect(gaps.count == 1)
      let first = try #require(names.firstIndex(of: "gap"))
      #expect(names[first - 1] == "time" && names[first + 1] == "time")
      let video = try #require(gaps.first { ($0["tracks"] as? [[String: Any]])?.first?["kind"] as? String == "video" })
      let range = try #require(video["range"] as? [String: Int64])
      #expect(range == ["start_ms": recordingStart + 3000, "end_ms": recordingStart + 6000])
      #expect(video["reasons"] as? [String] == ["noRecording"])
      let times = events.compactMap { $0["ms"] as? Int64 }
      #expect(times == times.sorted())
      #expect(times.last == recordingStart + 9000)
      let summary = try #require(events.last)
      #expect(summary["video_frames"] as? Int == 150)
      #expect((summary["audio_frames"] as? Int ?? 0) > 0)
      // On the free-running clock every picture is shown at its time: none dropped, none late.
      #expect(summary["dropped_frames"] as? Int == 0 && summary["late_frames"] as? Int == 0, "\(summary)")
      #expect(summary["render_size"] as? [String: Int] == ["width": 320, "height": 240])
      outputs.append(result.stdout)
    }
    #expect(outputs[0] == outputs[1])
    #expect(try server.stop() == 0)
  }

  @Test func playRefusesBadArguments() throws {
    let directory = try library(gap: false)
    let endpoint = ["--endpoint", "file://\(directory.url.path)", "--video-channel", "0"]
    #expect(try tipipe(["play", "--start", "10", "--end", "5"] + endpoint).status == 2)
    #expect(try tipipe(["play", "--start", "0", "--end", "5", "--speed", "3"] + endpoint).status == 2)
    #expect(try tipipe(["play", "--start", "0", "--end", "5", "--pace", "slow"] + endpoint).status == 2)
    #expect(try tipipe(["play", "--start", "0", "--end", "5", "--initial", "7"] + endpoint).status == 2)
  }

  @Test func isoTimesAreStrictRFC3339() throws {
    let directory = try library(gap: false)
    let endpoint = ["--endpoint", "file://\(directory.url.path)", "--video-channel", "0", "--pace", "fast"]
    let end = ["--end", String(recordingStart + 2000)]
    // Each ISO form plays exactly what its milliseconds play.
    let reference = try tipipe(["play", "--start", String(recordingStart + 500)] + end + endpoint)
    #expect(reference.status == 0)
    for text in [
      "2026-11-30T00:00:00.5Z", "2026-11-30T08:00:00.500+08:00", "2026-11-29T23:30:00.4996-00:30",
      "2026-11-30t00:00:00.500z",
    ] {
      let result = try tipipe(["play", "--start", text] + end + endpoint)
      #expect(result.status == 0 && result.stdout == reference.stdout, "\(text)")
    }
    for text in [
      "2026-12-01T00:00:00+24:00", "2026-12-01T00:00:00+1:00", "2026-12-01T00:00:00+12:345",
      "2026-12-01T00:00:00+00:60",
      "2026-12-01T00:00:00Zjunk", "2026-12-01T00:00:00ZZ", "2026-12-01T00:00:00+08:00junk", "2026-12-01T00:00:00Z ",
      "2026-12-01T00:00:00.9999999999Z", "2026-11-31T00:00:00Z", "2026-02-29T00:00:00Z", "2026-12-01T24:00:00Z",
      "2026-12-01T00:00:60Z", "2026-12-01T00:00:00", "2026-12-01T00:00:00.Z", "+2026-12-01T00:00:00Z",
    ] {
      #expect(try tipipe(["play", "--start", text] + end + endpoint).status == 2, "\(text)")
    }
  }

  @Test func aClosedOrFullStandardOutputIsAnErrorNotACrash() throws {
    let directory = try library(gap: false)
    let range = ["--start", String(recordingStart), "--end", String(recordingStart + 3000), "--video-channel", "0"]
    for arguments in [
      ["graph", "replay"], ["play", "--endpoint", "file://\(directory.url.path)", "--pace", "fast"] + range,
    ] {
      let ending = Finished(try tipipeChild(arguments, outputFile: "/dev/full").finish())
      #expect(ending.reason == .exit && ending.status == 1, "\(arguments[0])")
      #expect(ending.stderr.hasPrefix("error: fileWriteFailed (6046): standard output"), "\(ending.stderr)")
    }
  }

  @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
  func aSignalStopsAPlayThroughTheFacadeWithItsSummary(_ signal: Int32) throws {
    let directory = try library(gap: false)
    let process = try tipipeChild(
      [
        "play", "--endpoint", "file://\(directory.url.path)", "--start", String(recordingStart), "--end",
        String(recordingStart + 9000), "--video-channel", "0",
      ], captureErrors: false)
    // A real-time play of 9 s: the signal comes after its first time line (the main thread is parked in
    // dispatchMain by then, where a signal would otherwise take its default action).
    try process.readLines(of: .output) { !$0.contains("\"time\"") }
    process.signal(signal)
    let ended = try process.finish()
    let text = String(decoding: ended.output, as: UTF8.self)
    #expect(ended.reason == .exit && ended.status == 1)
    let names = lines(text).compactMap { $0["event"] as? String }
    #expect(names.last == "summary" && !names.contains("completed"))
  }

  @Test func snapshotWritesTheFirstFrameNotEarlierThanTheTarget() throws {
    let directory = try library()
    let out = directory.url.appendingPathComponent("snap.jpg")
    // Mid-GOP (GOPs start every 2 s), and inside the hole (the first frame after it, at 6 s).
    for at in [recordingStart + 1010, recordingStart + 4500] {
      let result = try tipipe(
        [
          "snapshot", "--endpoint", "file://\(directory.url.path)", "--at", String(at), "--video-channel", "0",
          "--out", out.path,
        ])
      #expect(result.status == 0, "\(result.stderr)")
      let probe = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", out.path])
      #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,320,240")
    }
    let nothing = try tipipe(
      [
        "snapshot", "--endpoint", "file://\(directory.url.path)", "--at", String(recordingStart + 20_000),
        "--video-channel", "0", "--out", out.path,
      ])
    #expect(nothing.status == 1)
    #expect(nothing.stderr.hasPrefix("error: noFrame (6118)"))
  }

  @Test("a snapshot looks 1 s ahead first, then the day: a frame after a 15 s gap is found")
  func snapshotFindsAFrameAfterALongGap() throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 25)
    options.gaps = [(offset: 3, length: 15)]
    try LibrarySynthesizer(options: options).write(to: directory.url)
    let out = directory.url.appendingPathComponent("after-gap.jpg")
    let result = try tipipe([
      "snapshot", "--endpoint", "file://\(directory.url.path)", "--at", String(recordingStart + 3500),
      "--video-channel", "0", "--out", out.path,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    // The picture is the one recorded at 18 s: the same JPEG as a snapshot asked at 18 s.
    let direct = directory.url.appendingPathComponent("at-18s.jpg")
    let asked = try tipipe([
      "snapshot", "--endpoint", "file://\(directory.url.path)", "--at", String(recordingStart + 18_000),
      "--video-channel", "0", "--out", direct.path,
    ])
    #expect(asked.status == 0, "\(asked.stderr)")
    #expect(try Data(contentsOf: out) == Data(contentsOf: direct))
  }

  @Test func T5_T18_playRecordWritesWhatPlayedAtSourceTimingWithTheHoleClosedUp() throws {
    let directory = try library()
    let out = try TemporaryDirectory()
    let record = out.url.appendingPathComponent("played.mp4")
    let result = try tipipe([
      "play", "--pace", "fast", "--speed", "8", "--endpoint", "file://\(directory.url.path)", "--start",
      String(recordingStart), "--end", String(recordingStart + 9000), "--video-channel", "0", "--audio-channel", "1",
      "--record", record.path,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    let recording = try #require(lines(result.stdout).first { $0["event"] as? String == "recording" })
    #expect(recording["code"] as? Int == 0)
    // [0, 3) and [6, 9): 6 s of media whatever the speed, the hole closed up.
    #expect(recording["duration_ms"] as? Int == 6000)
    let probe = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-show_entries", "format=duration:stream=codec_name", "-of", "csv=p=0", record.path])
    #expect(probe.split(separator: "\n").map(String.init) == ["h264", "aac", "6.000000"])
    // Nothing recordable: no file, the code said.
    let empty = out.url.appendingPathComponent("none.mp4")
    let nothing = try tipipe([
      "play", "--pace", "fast", "--endpoint", "file://\(directory.url.path)", "--start", String(recordingStart + 3500),
      "--end", String(recordingStart + 5000), "--video-channel", "0", "--record", empty.path,
    ])
    let refused = try #require(lines(nothing.stdout).first { $0["event"] as? String == "recording" })
    #expect(refused["code"] as? Int == 6119)
    #expect(!FileManager.default.fileExists(atPath: empty.path))
    // A directory is not an output.
    #expect(
      try tipipe([
        "play", "--endpoint", "file://\(directory.url.path)", "--start", "0", "--end", "1",
        "--video-channel", "0", "--record", out.url.path,
      ]).status == 2)
  }

  @Test func graphPrintsTheConfigurations() throws {
    let replay = try tipipe(["graph", "replay", "--format", "json"])
    #expect(replay.status == 0)
    let json = try #require(try JSONSerialization.jsonObject(with: Data(replay.stdout.utf8)) as? [String: Any])
    let nodes = (json["nodes"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    #expect(
      nodes == [
        "CloudSegmentSource", "SegmentVerifier", "SegmentDemuxer", "TrackRouter", "GapDetector", "PacketHistory",
        "ChannelWatch", "RecorderTap", "RawDumpTap", "Video0Decoder", "Video0Pacer", "Video0Output", "Audio1Decoder",
        "Audio1Pacer",
        "Audio1Output",
      ])
    let edges = json["edges"] as? [[String: Any]] ?? []
    #expect(edges.contains { $0["from"] as? String == "Video0Pacer" && $0["type"] as? String == "DecodedFrame" })
    let export = try tipipe(["graph", "export"])
    #expect(export.status == 0)
    #expect(export.stdout.hasPrefix("digraph pipeline {"))
    #expect(export.stdout.contains("Exporter"))
    #expect(try tipipe(["graph", "play"]).status == 2)
    #expect(try tipipe(["graph", "replay", "--format", "png"]).status == 2)
  }

  @Test func demoReplaysSnapshotsAndExports() throws {
    let cache = try TemporaryDirectory()
    let result = try tipipe(["demo", "--cache", cache.url.path])
    #expect(result.status == 0, "\(result.stderr)")
    // The replay runs on the file:// library, then over HTTP against the reference server: the hole
    // once each time (R74), both completed.
    let gap = "gap crossed: 2026-11-30T00:01:15Z – 2026-11-30T00:01:25Z (video 0, audio 1): noRecording"
    #expect(result.stdout.components(separatedBy: "gap crossed:").count == 3)
    #expect(result.stdout.components(separatedBy: gap).count == 3)
    #expect(result.stdout.components(separatedBy: "completed at 2026-11-30T00:01:30Z").count == 3)
    #expect(result.stdout.contains("the same library over the cloud API: http://127.0.0.1:"))
    for name in ["snapshot.jpg", "cloud-snapshot.jpg"] {
      let snapshot = cache.url.appendingPathComponent("demo/\(name)")
      let probe = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", snapshot.path])
      #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,640,360", "\(name)")
    }
    for name in ["recording.mp4", "cloud-recording.mp4"] {
      let recording = cache.url.appendingPathComponent("demo/\(name)")
      let probe = try run(
        "/usr/bin/ffprobe",
        [
          "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
          recording.path,
        ])
      #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "h264", "\(name)")
    }
    #expect(FileManager.default.fileExists(atPath: cache.url.appendingPathComponent("demo/export.mp4").path))
  }
}
