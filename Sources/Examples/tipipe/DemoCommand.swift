import Dispatch
import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe demo`: the main job on the embedded default. Synthesizes a library under the cache directory
/// (once), lists it, decodes a minute of it through the graph, and exports a range that contains a gap.
enum DemoCommand {
  static let summary = "the main job on an embedded library: synthesize, list, decode, replay, export"
  static let usage = """
    usage: tipipe demo [--cache DIR] [--verbose]

    Synthesizes a 2-minute encrypted library under the cache directory (once; default
    $XDG_CACHE_HOME/tirtc or ~/.cache/tirtc), lists its recordings, decodes a minute through the
    graph, replays a stretch at several speeds with a seek and takes a snapshot, and exports a range
    with a gap, printing where the files are.
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(arguments, known: ["--cache": .value])
    let cache = flags.string("--cache").map { URL(fileURLWithPath: $0) } ?? defaultCacheDirectory()
    let demo = cache.appendingPathComponent("demo")
    let library = demo.appendingPathComponent("library")

    var options = LibrarySynthesizer.Options()
    options.startMilliseconds = 1_795_996_800_000  // 2026-11-30T00:00:00Z
    options.durationSeconds = 120
    options.segmentSeconds = 20
    options.width = 640
    options.height = 360
    options.encrypt = true
    options.gaps = [(offset: 70, length: 15)]
    if !FileManager.default.fileExists(atPath: library.appendingPathComponent("index.json").path) {
      let began = Date()
      print("synthesizing a 2-minute recording (640x360 H.264 + AAC, encrypted, a 15 s hole) …")
      try? FileManager.default.removeItem(at: library)
      try LibrarySynthesizer(options: options).write(to: library)
      print("  done in \(String(format: "%.1f", Date().timeIntervalSince(began))) s")
    }
    print("library: \(library.path)")

    let index = try RecordingIndex.load(library: library)
    let day = MediaRange(
      startMilliseconds: options.startMilliseconds, endMilliseconds: options.startMilliseconds + 86_400_000)
    let ranges = index.mergedRanges(in: day)
    print("recordings (\(index.segments.count) objects, \(ranges.count) ranges):")
    for range in ranges {
      print(
        "  \(iso(range.start.milliseconds)) – \(iso(range.end.milliseconds))  (\(range.duration.milliseconds / 1000) s)"
      )
    }

    try decodeMinute(of: library, from: options.startMilliseconds)
    try replay(library: library, from: options.startMilliseconds, into: demo)

    let exportRange = MediaRange(
      startMilliseconds: options.startMilliseconds + 45_500, endMilliseconds: options.startMilliseconds + 105_000)
    let output = demo.appendingPathComponent("export.mp4")
    print("export \(iso(exportRange.start.milliseconds)) – \(iso(exportRange.end.milliseconds)):")
    let result = try export(library: library, range: exportRange, to: output)
    let report = result.report
    guard result.code == .ok, let file = result.file else {
      throw TiError(result.code, "the export ended with \(result.report.termination)")
    }
    print("  file: \(file.path) (\(Double(result.durationMs) / 1000) s)")
    print(
      "  covered \(Double(report.coveredDurationMs) / 1000) s in \(report.segments.count) segment(s), complete: \(report.complete)"
    )
    for segment in report.segments {
      print(
        "    source \(iso(segment.sourceRange.startMs)) – \(iso(segment.sourceRange.endMs)) → file "
          + "\(Double(segment.outputStartMs) / 1000)–\(Double(segment.outputEndMs) / 1000) s")
    }
    for gap in report.gaps {
      print(
        "    gap \(iso(gap.range.startMs)) – \(iso(gap.range.endMs)): "
          + gap.reasons.map(\.rawValue).joined(separator: ", "))
    }
    let reportFile = demo.appendingPathComponent("export.json")
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    try encoder.encode(report).write(to: reportFile)
    print("  report: \(reportFile.path)")
    return 0
  }

  /// Decodes the first minute's video through `source → verify → demux → decoder → sink` and prints
  /// what the graph did.
  static func decodeMinute(of library: URL, from start: Int64) throws {
    let began = Date()
    let range = MediaRange(startMilliseconds: start, endMilliseconds: start + 60_000)
    let (frames, statistics) = try BenchCommand.decode(
      source: LocalLibrarySource(directory: library, range: range), range: range, channel: 0, threads: 1)
    let seconds = Date().timeIntervalSince(began)
    print("decoded the first minute through the graph: \(frames) frames in \(String(format: "%.2f", seconds)) s")
    print("  node                     items in  items out  busy ms")
    for node in statistics.nodes {
      let name = node.name.padding(toLength: 24, withPad: " ", startingAt: 0)
      print(
        "  \(name) \(pad(node.itemsIn, 9)) \(pad(node.itemsOut, 10)) \(pad(Int(node.busyNanoseconds / 1_000_000), 8))")
    }
  }

  /// Replays 00:00:55–00:01:30 in real time through the Replay graph: at 4×, then 1/2×, then a seek
  /// into the hole at 00:01:15 at 8× (the play goes on at the first frame after it); then a snapshot of
  /// the last frame presented.
  static func replay(library: URL, from start: Int64, into demo: URL) throws {
    let events = DispatchQueue(label: "tipipe.demo.replay")
    let replay = Replay(service: LocalLibraryService(directory: library), environment: .realtime(callbacks: events))
    replay.bindVideo(channel: 0, renderer: NullRenderer())
    replay.bindAudio(channel: 1, device: NullAudioDevice())
    let done = DispatchSemaphore(value: 0)
    replay.onRecordingGap = { gap in
      let tracks = gap.tracks.map { "\($0.kind == .video ? "video" : "audio") \($0.channel)" }
      print(
        "  gap crossed: \(iso(gap.range.start.milliseconds)) – \(iso(gap.range.end.milliseconds)) "
          + "(\(tracks.joined(separator: ", "))): " + gap.reasons.map(\.rawValue).joined(separator: ", "))
    }
    replay.onCompleted = { done.signal() }
    replay.onError = { error in
      print("  replay failed: \(error)")
      done.signal()
    }
    func position() -> String { replay.currentTimeMs.map(iso) ?? "–" }
    print("replay \(iso(start + 55_000)) – \(iso(start + 90_000)) in real time:")
    let began = Date()
    replay.setSpeed(.x4)
    guard replay.play(startTimeMs: start + 55_000, endTimeMs: start + 90_000, token: "demo") == .ok else {
      throw TiError(.invalidArgument, "the demo's replay was refused")
    }
    Thread.sleep(forTimeInterval: 1)
    print("  4x for 1 s: at \(position())")
    replay.setSpeed(.x0_5)
    Thread.sleep(forTimeInterval: 1)
    print("  1/2x for 1 s: at \(position())")
    replay.setSpeed(.x8)
    replay.seek(toTimeMs: start + 75_000)
    print("  seek to \(iso(start + 75_000)) (inside the hole) at 8x")
    done.wait()
    let figures = replay.statistics
    print(
      "  completed at \(position()) after \(String(format: "%.1f", Date().timeIntervalSince(began))) s: "
        + "\(figures.videoFrames) video frames presented, \(figures.droppedFrames) dropped as late")
    if let frame = replay.lastPresentedFrame {
      let snapshot = demo.appendingPathComponent("snapshot.jpg")
      try OutputFile.write(try frame.jpegData(), to: snapshot)
      print("  snapshot of the last frame (\(iso(frame.time.milliseconds))): \(snapshot.path)")
    }
    replay.stop()
  }

  static func export(library: URL, range: MediaRange, to output: URL) throws -> ExportResult {
    let terminal = isatty(STDOUT_FILENO) == 1
    let job = try ExportJob(
      request: .init(
        range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1), output: output),
      source: LocalLibrarySource(directory: library, range: range),
      progress: { fraction, _ in
        guard terminal else { return }
        let filled = Int(fraction * 40)
        print(
          "\r  " + String(repeating: "█", count: filled) + String(repeating: "·", count: 40 - filled)
            + String(format: " %5.1f%%", fraction * 100), terminator: "")
        fflush(nil)
      },
      completion: { _ in })
    let result = job.waitForResult()
    if terminal { print("") }
    return result
  }

  static func defaultCacheDirectory() -> URL {
    if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], !xdg.isEmpty {
      return URL(fileURLWithPath: xdg).appendingPathComponent("tirtc")
    }
    return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/tirtc")
  }

  static func iso(_ milliseconds: Int64) -> String {
    let formatter = ISO8601DateFormatter()
    return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
  }

  static func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
  }
}
