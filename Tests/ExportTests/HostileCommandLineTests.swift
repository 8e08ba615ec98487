import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// The command line as a hostile user drives it: outputs aimed at what the run reads or keeps, a
/// recording path swapped while the play runs, a work root that cannot exist, malformed endpoints.
@Suite("Hostile command lines: nothing the run reads or keeps is replaced, every failure is a line")
struct HostileCommandLineTests {
  func library(seconds: Int = 3) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: seconds)).write(to: directory.url)
    return directory
  }

  func lines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  var range: [String] { ["--start", String(recordingStart), "--end", String(recordingStart + 3000)] }

  /// Runs a real-time `tipipe play` with `arguments`, calls `begun` once its first time line is out, and
  /// reads it to its end.
  func play(_ arguments: [String], whenPlaying begun: (ChildProcess) throws -> Void) throws -> Finished {
    let process = try tipipeChild(["play"] + arguments)
    try process.readLines(of: .output) { !$0.contains("\"event\":\"time\"") }
    try begun(process)
    return Finished(try process.finish())
  }

  @Test("--record and --out never land on the library's files or in the cache: usage errors, nothing changes")
  func outputsAimedAtWhatTheRunReadsOrKeeps() throws {
    let directory = try library()
    let cache = try TemporaryDirectory()
    let endpoint = ["--endpoint", "file://\(directory.url.path)", "--cache", cache.url.path]
    let index = directory.url.appendingPathComponent("index.json").path
    _ = try tipipe(["list", "--token", "t"] + endpoint + range)
    let library = try snapshot(directory.url)
    let kept = try snapshot(cache.url)
    #expect(!kept.isEmpty)
    let log = try #require(kept.keys.first { $0.hasSuffix(".log") }, "\(kept.keys)")
    let object = try #require(try RecordingIndex.load(library: directory.url).segments.first).fileURL(in: directory.url)
    for target in [index, object.path, cache.url.path, cache.url.appendingPathComponent(log).path] {
      let play = try tipipe(["play", "--pace", "fast", "--video-channel", "0", "--record", target] + endpoint + range)
      #expect(play.status == 2, "\(target): \(play.stderr)")
      #expect(play.stdout.isEmpty)
      let export = try tipipe(["export", "--video-channel", "0", "--out", target] + endpoint + range)
      #expect(export.status == 2, "\(target): \(export.stderr)")
      let snapshot = try tipipe(
        ["snapshot", "--video-channel", "0", "--at", String(recordingStart), "--out", target] + endpoint)
      #expect(snapshot.status == 2, "\(target): \(snapshot.stderr)")
    }
    #expect(try snapshot(directory.url) == library)
    // A new file beside the library's is fine, and so is replacing it.
    let beside = directory.url.appendingPathComponent("export.mp4")
    #expect(try tipipe(["export", "--video-channel", "0", "--out", beside.path] + endpoint + range).status == 0)
    #expect(try tipipe(["export", "--video-channel", "0", "--out", beside.path] + endpoint + range).status == 0)
  }

  @Test("a --record path swapped for a directory during the play is not replaced; the recording is kept")
  func aRecordPathSwappedDuringThePlay() throws {
    let directory = try library()
    let cache = try TemporaryDirectory()
    let outputs = try TemporaryDirectory()
    let target = outputs.url.appendingPathComponent("recording.mp4")
    // The play runs in real time (3 s): the path is swapped once it has begun.
    let played = try play(
      ["--video-channel", "0", "--record", target.path, "--endpoint", "file://\(directory.url.path)"]
        + ["--cache", cache.url.path] + range
    ) { _ in try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false) }
    #expect(played.status == 1)
    let events = lines(played.stdout)
    #expect(events.last?["event"] as? String == "summary")
    let recording = try #require(events.first { $0["event"] as? String == "recording" })
    #expect(recording["code"] as? Int == 6046)
    var status = stat()
    #expect(lstat(target.path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR)
    let keptPath = try #require(recording["kept"] as? String)
    let probe = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", keptPath])
    #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "h264")
  }

  /// Runs `tipipe arguments` through `sh -c` with `redirection` applied to it (`>&-`, `> FILE`).
  func shell(_ arguments: [String], _ redirection: String) throws -> Finished {
    Finished(
      try ChildProcess(
        "/bin/sh", ["-c", "exec \"$0\" \"$@\" \(redirection)", try tipipeExecutable().path] + arguments,
        environment: tipipeEnvironment(), captureOutput: false
      ).finish())
  }

  @Test("a closed standard output fails the play; nothing it meant for stdout lands in the SDK's log")
  func aClosedStandardOutput() throws {
    let directory = try library()
    let cache = try TemporaryDirectory()
    let play = try shell(
      ["play", "--pace", "fast", "--video-channel", "0", "--endpoint", "file://\(directory.url.path)"]
        + ["--cache", cache.url.path] + range, ">&-")
    #expect(play.status == 1)
    #expect(play.stderr.contains("error: fileWriteFailed (6046): standard output"), "\(play.stderr)")
    let logs = try FileManager.default.subpathsOfDirectory(atPath: cache.url.path).filter { $0.hasSuffix(".log") }
    #expect(!logs.isEmpty)
    for log in logs {
      let text = try String(contentsOf: cache.url.appendingPathComponent(log), encoding: .utf8)
      #expect(!text.contains("\"event\""), "\(log)")
    }
  }

  @Test("--record that is stdout's file or ends in '/' is a usage error; a recording not made is exit 1")
  func recordingsThatCannotBeMade() throws {
    let directory = try library()
    let cache = try TemporaryDirectory()
    let outputs = try TemporaryDirectory()
    let play = ["play", "--pace", "fast", "--endpoint", "file://\(directory.url.path)", "--cache", cache.url.path]
    let same = outputs.url.appendingPathComponent("same.mp4").path
    let redirected = try shell(play + ["--video-channel", "0", "--record", same] + range, "> '\(same)'")
    #expect(redirected.status == 2, "\(redirected.stderr)")
    #expect(redirected.stderr.contains("is where standard output goes"))
    let slash = try tipipe(play + ["--video-channel", "0", "--record", outputs.url.path + "/new.mp4/"] + range)
    #expect(slash.status == 2)
    #expect(!FileManager.default.fileExists(atPath: outputs.url.appendingPathComponent("new.mp4").path))
    let nothing = try tipipe(
      play + ["--video-channel", "9", "--record", outputs.url.appendingPathComponent("none.mp4").path] + range)
    #expect(nothing.status == 1)
    #expect(
      nothing.stderr.hasPrefix("error: noRecordableMedia (6119)") && nothing.stderr.split(separator: "\n").count == 1)
    let events = lines(nothing.stdout)
    #expect(events.first { $0["event"] as? String == "recording" }?["code"] as? Int == 6119)
    #expect(events.last?["event"] as? String == "summary")
  }

  @Test("a signal during a play ends it with the cancelled error event, then the summary")
  func aSignalDuringThePlay() throws {
    // 30 s played in real time: the signal comes long before the end, however late this process runs.
    let directory = try library(seconds: 30)
    let cache = try TemporaryDirectory()
    let played = try play(
      [
        "--video-channel", "0", "--endpoint", "file://\(directory.url.path)", "--cache", cache.url.path, "--start",
        String(recordingStart), "--end", String(recordingStart + 30_000),
      ]
    ) { $0.signal(SIGINT) }
    let (text, errorText) = (played.stdout, played.stderr)
    #expect(played.status == 1)
    #expect(errorText.hasPrefix("error: cancelled (6115)"))
    let names = lines(text).compactMap { $0["event"] as? String }
    #expect(!names.contains("completed"))
    #expect(names.filter { $0 == "error" }.count == 1)
    #expect(names.last == "summary")
    let error = try #require(lines(text).first { $0["event"] as? String == "error" })
    #expect(error["code"] as? Int == 6115)
  }

  @Test("the unfinished recordings of a process that died are removed from the cache, and only those")
  func staleRecordingsInTheCache() throws {
    let directory = try library()
    let cache = try TemporaryDirectory()
    let media = cache.url.appendingPathComponent("media")
    try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
    let finished = try ChildProcess("/bin/true", [])
    _ = try finished.finish()
    let dead = media.appendingPathComponent(".recording-a.mp4.\(finished.pid).\(UUID()).partial.mp4")
    let alive = media.appendingPathComponent(".recording-b.mp4.\(getpid()).\(UUID()).partial.mp4")
    let kept = media.appendingPathComponent("recording-c.mp4")
    for file in [dead, alive, kept] { #expect(FileManager.default.createFile(atPath: file.path, contents: Data())) }
    let list = try tipipe(
      ["list", "--endpoint", "file://\(directory.url.path)", "--token", "t", "--cache", cache.url.path] + range)
    #expect(list.status == 0, "\(list.stderr)")
    #expect(!FileManager.default.fileExists(atPath: dead.path))
    #expect(FileManager.default.fileExists(atPath: alive.path))
    #expect(FileManager.default.fileExists(atPath: kept.path))
  }

  @Test("a work root that cannot be a directory: list, days and play still print their JSON, exit 1")
  func aCacheThatCannotBeADirectory() throws {
    let directory = try library()
    let endpoint = ["--endpoint", "file://\(directory.url.path)", "--token", "t", "--cache", "/dev/null"]
    let list = try tipipe(["list"] + endpoint + range)
    #expect(list.status == 1)
    #expect(list.stdout == "{\"code\":6044,\"recordings\":[]}\n")
    let days = try tipipe(["days", "--start-date", "2026-11-29", "--end-date", "2026-12-01"] + endpoint)
    #expect(days.status == 1)
    #expect(days.stdout == "{\"code\":6044,\"days\":[]}\n")
    let play = try tipipe(["play", "--pace", "fast", "--video-channel", "0"] + endpoint + range)
    #expect(play.status == 1)
    let events = lines(play.stdout)
    #expect(events.compactMap { $0["event"] as? String } == ["error", "summary"])
    #expect(events.first?["code"] as? Int == 6044)
    for result in [list, days, play] {
      #expect(result.stderr.split(separator: "\n").count == 1)
      #expect(result.stderr.hasPrefix("error: workDirectoryUnavailable (6044)"))
    }
  }

  @Test("malformed endpoints and stray words are usage errors on one line")
  func malformedEndpointsAndStrayWords() throws {
    let range = self.range + ["--token", "t"]
    let newline = try tipipe(["list", "--endpoint", "http://a\nb.invalid"] + range)
    #expect(newline.status == 2)
    #expect(newline.stderr.split(separator: "\n").count == 1, "\(newline.stderr)")
    let port = try tipipe(["list", "--endpoint", "http://127.0.0.1:99999"] + range)
    #expect(port.status == 2)
    #expect(port.stderr.contains("invalidArgument (6000)") && port.stderr.contains("99999"), "\(port.stderr)")
    let stray = try tipipe(["list", "--endpoint", "http://127.0.0.1:1", "now"] + range)
    #expect(stray.status == 2)
    #expect(stray.stderr.contains("unexpected argument 'now'"), "\(stray.stderr)")
    let served = try library()
    let file = served.url.appendingPathComponent("index.json")
    let serve = try tipipe(["serve", "--root", file.path, "--port", "0"])
    #expect(serve.status == 1)
    #expect(serve.stderr.contains("is not a directory"), "\(serve.stderr)")
  }
}
