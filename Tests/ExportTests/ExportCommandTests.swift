import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// Starts `tipipe export --progress-lines` and calls `atProgress` with each progress value read from its
/// stderr; returns the exit status and stderr.
func runExport(
  _ arguments: [String], atProgress: (ChildProcess, Double) -> Void
) throws -> (status: Int32, reason: Process.TerminationReason, stderr: String) {
  let process = try tipipeChild(["export", "--progress-lines"] + arguments, captureOutput: false)
  try process.readLines(of: .errors) { line in
    if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
      let progress = object["progress"] as? Double
    {
      atProgress(process, progress)
    }
    return true
  }
  let ended = try process.finish()
  return (ended.status, ended.reason, String(decoding: ended.errors, as: UTF8.self))
}

@Suite("tipipe export as a process")
struct ExportCommandTests {
  /// Thirty minutes of 320x240 (a minute, repeated): the export takes long enough after its halfway
  /// point for the test to signal it, even on a loaded machine.
  static let minutes = 30

  func makeLibrary(in directory: URL) throws -> URL {
    let minute = directory.appendingPathComponent("minute")
    var options = smallOptions(seconds: 60)
    options.segmentSeconds = 10
    try LibrarySynthesizer(options: options).write(to: minute)
    let library = directory.appendingPathComponent("lib")
    try repeatLibrary(minute, copies: Self.minutes, into: library)
    try FileManager.default.removeItem(at: minute)
    return library
  }

  func arguments(_ library: URL, _ output: URL) -> [String] {
    [
      "--endpoint", "file://\(library.path)", "--start", String(recordingStart), "--end",
      String(recordingStart + Int64(Self.minutes) * 60_000), "--video-channel", "0", "--audio-channel", "1", "--out",
      output.path,
    ]
  }

  @Test(
    "SIGINT, SIGTERM and SIGHUP cancel: exit 1, the cancelled error line, and no file left behind",
    arguments: [SIGINT, SIGTERM, SIGHUP])
  func signalsCancel(_ signal: Int32) throws {
    let directory = try TemporaryDirectory()
    let library = try makeLibrary(in: directory.url)
    let output = directory.url.appendingPathComponent("out.mp4")
    var sent = false
    let result = try runExport(arguments(library, output)) { process, progress in
      if progress >= 0.5 && !sent {
        sent = true
        process.signal(signal)
      }
    }
    #expect(sent)
    #expect(result.reason == .exit)
    #expect(result.status == 1)
    #expect(result.stderr.contains("error: cancelled (6115)"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
  }

  @Test(
    "a report path that became a link during the run: exit 1 fileWriteFailed (not 2), the link and its target untouched, the MP4 kept"
  )
  func reportPathSwappedForALink() throws {
    let directory = try TemporaryDirectory()
    let library = try makeLibrary(in: directory.url)
    let output = directory.url.appendingPathComponent("out.mp4")
    let report = directory.url.appendingPathComponent("report.json")
    let target = directory.url.appendingPathComponent("precious.txt")
    try Data("keep me".utf8).write(to: target)
    var swapped = false
    let result = try runExport(arguments(library, output) + ["--report", report.path]) { _, progress in
      guard !swapped else { return }
      swapped = true
      try? FileManager.default.createSymbolicLink(at: report, withDestinationURL: target)
    }
    #expect(swapped)
    #expect(result.status == 1, "\(result.stderr)")
    let line = result.stderr.split(separator: "\n").first { $0.hasPrefix("error: ") } ?? ""
    #expect(
      line.hasPrefix("error: fileWriteFailed (6046): the report was not written; the MP4 is complete at"), "\(line)")
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: report.path) == target.path)
    #expect(try String(contentsOf: target, encoding: .utf8) == "keep me")
    #expect(try probeRecording(output.path).frames > 0)
    // No temporary report left beside it.
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasPrefix(".report") } == [])
  }

  @Test("a signal that arrives as soon as main has started cancels too: no default action, no file")
  func earlySignal() throws {
    let directory = try TemporaryDirectory()
    let library = try makeLibrary(in: directory.url)
    let output = directory.url.appendingPathComponent("out.mp4")
    for signal in [SIGINT, SIGTERM, SIGHUP] {
      // tipipe stops itself right after its first statement took over the signals
      // (TIPIPE_STOP_AFTER_SIGNAL_SETUP): the signal arrives there, before any command ran.
      let process = try tipipeChild(
        ["export"] + arguments(library, output), environment: ["TIPIPE_STOP_AFTER_SIGNAL_SETUP": "1"],
        captureOutput: false, captureErrors: false)
      let deadline = ContinuousClock.now + testDeadline
      var state = ""
      while !state.hasPrefix("T") && !process.hasEnded {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut("tipipe export stopping after its start") }
        let status = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
        state = status.split(separator: "\n").first { $0.hasPrefix("State:") }.map { String($0.dropFirst(7)) } ?? ""
        if !state.hasPrefix("T") { sched_yield() }
      }
      process.signal(signal)
      process.signal(SIGCONT)
      let ending = try process.finish()
      #expect(ending.reason == .exit, "signal \(signal)")
      #expect(ending.status == 1, "signal \(signal)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
    }
  }

  @Test("an export removes the temporary files that dead writers left beside its output, and no other file")
  func staleTemporaryFilesRemoved() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: library)
    // A process that has ended: its pid is free (and will not be reused within this test).
    let ended = try ChildProcess("/bin/true", [])
    _ = try ended.finish()
    let dead = ended.pid
    let alive = getpid()
    let uuid = UUID().uuidString
    let names = [
      ".out.mp4.\(dead).\(uuid).partial.mp4", ".out.mp4.\(dead).\(uuid).partial.mp4.final.mp4",
      ".out.mp4.\(alive).\(uuid).partial.mp4", ".out.mp4.\(dead).not-a-uuid.partial.mp4",
      ".other.mp4.\(dead).\(uuid).partial.mp4", "notes.txt",
    ]
    for name in names { try Data("x".utf8).write(to: directory.url.appendingPathComponent(name)) }
    let result = try tipipe([
      "export", "--endpoint", "file://\(library.path)", "--start", String(recordingStart), "--end",
      String(recordingStart + 3000), "--video-channel", "0", "--out",
      directory.url.appendingPathComponent("out.mp4").path,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
    #expect(left == Set(["lib", "out.mp4"] + names[2...]), "\(left.sorted())")
  }

  @Test("a killed writer leaves a fragmented file that plays up to its last fragment")
  func killedWriterKeepsFragments() throws {
    let directory = try TemporaryDirectory()
    let library = try makeLibrary(in: directory.url)
    let output = directory.url.appendingPathComponent("out.mp4")
    var killed = false
    let result = try runExport(arguments(library, output)) { process, progress in
      if progress >= 0.5 && !killed {
        killed = true
        process.signal(SIGKILL)
      }
    }
    #expect(killed)
    #expect(result.reason == .uncaughtSignal)
    #expect(!FileManager.default.fileExists(atPath: output.path), "the final name appears only on success")
    let partial = try #require(
      try FileManager.default.contentsOfDirectory(atPath: directory.url.path).first { $0.hasSuffix(".partial.mp4") })
    let probe = try Probe(directory.url.appendingPathComponent(partial))
    // Half the range had been scanned; what reached the file before the kill, up to its last fragment
    // (about one a second), plays: at least five minutes of it, every frame in order, 40 ms apart.
    #expect(probe.videoPackets.count >= 25 * 300, "\(probe.videoPackets.count) frames")
    #expect(probe.videoPackets.first?.key == true)
    let times = probe.videoPackets.map(\.pts)
    #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 0.04) < 0.001 })
  }

  @Test("tipipe synth writes a library with every option, and rejects bad values with exit 2")
  func synthCommand() throws {
    let directory = try TemporaryDirectory()
    let out = directory.url.appendingPathComponent("lib")
    let result = try tipipe([
      "synth", "--out", out.path, "--start", "2026-11-30T08:00:00+08:00", "--duration", "8", "--segment-seconds", "4",
      "--size", "160x120", "--fps", "10", "--gop", "20", "--video", "h264", "--audio", "g711u", "--video-channel", "3",
      "--audio-channel", "4", "--encrypt", "--gap", "2:1", "--device-id", "cam-9",
    ])
    #expect(result.status == 0, "\(result.stderr)")
    let index = try RecordingIndex.decode(try Data(contentsOf: out.appendingPathComponent("index.json")))
    #expect(index.deviceId == "cam-9")
    #expect(index.segments.first?.startMs == 1_795_996_800_000)  // 2026-11-30T00:00:00Z
    #expect(index.segments.map { $0.endMs - $0.startMs } == [2000, 1000, 4000])
    #expect(index.segments.allSatisfy { $0.key != nil })
    #expect(index.segments.first?.tracks.map(\.codec) == ["h264", "g711u"])
    #expect(index.segments.first?.tracks.map(\.channelId) == [3, 4])

    for bad in [["--size", "7x7"], ["--audio", "mp3"], ["--gap", "x"], ["--fps", "0"], ["--nope", "1"]] {
      let rejected = try tipipe(["synth", "--out", directory.url.appendingPathComponent("bad").path] + bad)
      #expect(rejected.status == 2 && rejected.reason == .exit, "\(bad)")
    }
  }

  @Test("export runs through the SDK facade: its work root logs the task; the MP4 is at --out, the cache keeps none")
  func exportRunsThroughTheFacade() throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 6)
    options.segmentSeconds = 2
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: options).write(to: library)
    let cache = directory.url.appendingPathComponent("cache")
    let output = directory.url.appendingPathComponent("out.mp4")
    let result = try tipipe([
      "export", "--endpoint", "file://\(library.path)", "--start", String(recordingStart), "--end",
      String(recordingStart + 6000), "--video-channel", "0", "--audio-channel", "1", "--out", output.path,
      "--report", "-", "--cache", cache.path,
    ])
    #expect(result.status == 0)
    let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(report?["file"] as? String == output.path)
    #expect((report?["report"] as? [String: Any])?["termination"] as? String == "exhausted")
    let probe = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", output.path])
    #expect(probe.contains("h264") && probe.contains("aac"))
    let log = try String(contentsOf: cache.appendingPathComponent("logs/cloudstorage.log"), encoding: .utf8)
    #expect(log.contains("initialized: appId tipipe"))
    #expect(log.contains("started: [\(recordingStart), \(recordingStart + 6000)) video 0 audio 1"))
    #expect(log.contains("ended: ok (0), exhausted"))
    let media = cache.appendingPathComponent("media")
    #expect((try? FileManager.default.contentsOfDirectory(atPath: media.path))?.isEmpty ?? true)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["cache", "lib", "out.mp4"])
  }

  @Test("usage errors exit 2 with one line; an empty range exits 1 with the seed's code")
  func exitCodes() throws {
    let usage = try tipipe(["export", "--bogus", "1"])
    #expect(usage.status == 2 && usage.reason == .exit)

    let directory = try TemporaryDirectory()
    let library = try makeLibrary(in: directory.url)
    let empty = try tipipe([
      "export", "--endpoint", "file://\(library.path)", "--start", "2026-12-24T00:00:00Z", "--end",
      "2026-12-24T00:10:00Z", "--video-channel", "0", "--out", directory.url.appendingPathComponent("x.mp4").path,
      "--report", "-",
    ])
    #expect(empty.status == 1 && empty.reason == .exit)
    #expect(empty.stderr.hasPrefix("error: noRecordableMedia (6119):"))
    let object = try JSONSerialization.jsonObject(with: Data(empty.stdout.utf8)) as? [String: Any]
    #expect(object?["code"] as? Int == 6119)
    #expect(object?["file"] is NSNull)
  }
}
