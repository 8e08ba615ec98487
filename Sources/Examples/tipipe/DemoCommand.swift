import CloudServer
import Dispatch
import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// `tipipe demo`: the main job on the embedded default. Synthesizes a library under the cache directory
/// (once), lists it, decodes a minute of it through the graph, replays a stretch and exports a range
/// that contains a gap through the SDK facade on the `file://` library, then lists and replays it
/// again over the cloud API (the reference server on 127.0.0.1, real HTTP).
enum DemoCommand {
  static let summary = "the main job on an embedded library: synthesize, list, decode, replay, export"
  static let usage = """
    usage: tipipe demo [--cache DIR] [--verbose]

    Synthesizes a 2-minute encrypted library under the cache directory (once; default
    $XDG_CACHE_HOME/tirtc or ~/.cache/tirtc), lists its recordings, decodes a minute through the
    graph, replays a stretch at several speeds with a seek and takes a snapshot, and exports a range
    with a gap, printing where the files are; then serves the library over the cloud API on
    127.0.0.1 (a free port) and lists and replays it again over HTTP.
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let cache = try FacadeSession.cacheDirectory(try FlagParser(arguments, known: ["--cache": .value]))
    // The SDK delivers list, snapshot and Output callbacks on the main queue: the main thread runs it
    // while the demo works on a thread of its own and exits when done.
    FacadeSession.runOffMain { try demo(cache: cache) }
  }

  /// The demo itself, on its own thread.
  static func demo(cache: URL) throws -> Int32 {
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

    // The SDK facade from here on: the runtime, one device, its days and ranges.
    let sdkRoot = demo.appendingPathComponent("sdk")
    let initialized = TiCloudStorage.initialize(
      appId: "tipipe-demo", endpoint: library.absoluteString, consoleLogEnabled: false, cacheDirectory: sdkRoot.path)
    guard initialized == TiCloudStorageErrorCode.ok else {
      throw TiError(TiErrorCode(rawValue: initialized), "TiCloudStorage.initialize failed")
    }
    print("TiCloudStorage initialized (work root \(sdkRoot.path))")
    let storage = TiCloudStorage(token: "demo-device-token")
    let days = FacadeSession.waitOnMain { done in
      storage.listRecordingDays(startDate: "2026-11-29", endDate: "2026-12-01", timeZoneId: "UTC", completion: done)
    }
    try FacadeSession.check(days.code, "listRecordingDays")
    print("days: " + days.days.map { "\($0.date) \($0.hasRecording ? "recorded" : "empty")" }.joined(separator: ", "))
    let start = options.startMilliseconds
    let listed = FacadeSession.waitOnMain { done in
      storage.listRecordings(startTimeMs: start, endTimeMs: start + 86_400_000, completion: done)
    }
    try FacadeSession.check(listed.code, "listRecordings")
    print("recordings (\(listed.recordings.count) ranges):")
    for range in listed.recordings {
      print(
        "  \(iso(range.startTimeMs)) – \(iso(range.endTimeMs))  (\((range.endTimeMs - range.startTimeMs) / 1000) s)")
    }

    try decodeMinute(of: library, from: start)
    try replay(storage, from: start, into: demo, keeping: "")

    let exportStart = start + 45_500
    let exportEnd = start + 105_000
    print("export \(iso(exportStart)) – \(iso(exportEnd)):")
    let result = try export(storage, from: exportStart, to: exportEnd)
    guard result.code == TiCloudStorageErrorCode.ok, let file = result.file, let report = result.report else {
      throw TiError(
        TiErrorCode(rawValue: result.code),
        "the export ended with \(result.report?.termination.description ?? "no report")")
    }
    let output = demo.appendingPathComponent("export.mp4")
    try FacadeSession.move(file.path, to: output)
    print("  file: \(output.path) (\(Double(file.durationMs) / 1000) s)")
    print(
      "  covered \(Double(report.coveredDurationMs) / 1000) s in \(report.segments.count) segment(s), complete: \(report.complete)"
    )
    for segment in report.segments {
      print(
        "    source \(iso(segment.sourceRange.startTimeMs)) – \(iso(segment.sourceRange.endTimeMs)) → file "
          + "\(Double(segment.outputStartMs) / 1000)–\(Double(segment.outputEndMs) / 1000) s")
    }
    for gap in report.gaps {
      print(
        "    gap \(iso(gap.range.startTimeMs)) – \(iso(gap.range.endTimeMs)): "
          + gap.reasons.map(\.name).joined(separator: ", "))
    }
    // 0 means started (the completion then comes once); anything else means it never comes.
    let upload = Locked<TiRtcLogUploadResult?>(nil)
    let uploadDone = DispatchSemaphore(value: 0)
    try FacadeSession.check(
      TiRtcLogging.upload { result in
        upload.withLock { $0 = result }
        uploadDone.signal()
      }, "TiRtcLogging.upload")
    uploadDone.wait()
    let uploaded = upload.withLock { $0! }
    try FacadeSession.check(uploaded.code, "TiRtcLogging.upload")
    print("uploaded the SDK's log and the raw dump: logId \(uploaded.logId ?? "–") (in \(library.path)/uploads)")
    try FacadeSession.check(storage.dispose(), "TiCloudStorage.dispose")
    try FacadeSession.check(TiCloudStorage.shutdown(), "TiCloudStorage.shutdown")
    print("disposed the device and shut TiCloudStorage down")
    try overTheCloudAPI(library: library, sdkRoot: sdkRoot, from: start, into: demo)
    return 0
  }

  /// The same library over HTTP: the reference server on a free port of 127.0.0.1, a token it signs,
  /// the SDK initialized on its endpoint, the ranges listed and the same replay played again.
  static func overTheCloudAPI(library: URL, sdkRoot: URL, from start: Int64, into demo: URL) throws {
    let secret = "tipipe-demo-secret"
    var configuration = ServerConfiguration(root: library, secret: secret)
    configuration.port = 0
    let server = try ReferenceServer(configuration)
    defer { server.stop() }
    let device = try RecordingIndex.load(library: library).deviceId
    let token = CloudToken(deviceId: device, expires: Int64(Date().timeIntervalSince1970) + 3600).signed(secret: secret)
    print("the same library over the cloud API: \(server.endpoint) (tipipe's reference server, real HTTP)")
    let initialized = TiCloudStorage.initialize(
      appId: "tipipe-demo", endpoint: server.endpoint, consoleLogEnabled: false, cacheDirectory: sdkRoot.path)
    guard initialized == TiCloudStorageErrorCode.ok else {
      throw TiError(TiErrorCode(rawValue: initialized), "TiCloudStorage.initialize failed")
    }
    let storage = TiCloudStorage(token: token)
    let listed = FacadeSession.waitOnMain { done in
      storage.listRecordings(startTimeMs: start, endTimeMs: start + 86_400_000, completion: done)
    }
    try FacadeSession.check(listed.code, "listRecordings")
    print(
      "recordings (\(listed.recordings.count) ranges): "
        + listed.recordings.map { "\(iso($0.startTimeMs)) – \(iso($0.endTimeMs))" }.joined(separator: ", "))
    try replay(storage, from: start, into: demo, keeping: "cloud-")
    try FacadeSession.check(storage.dispose(), "TiCloudStorage.dispose")
    try FacadeSession.check(TiCloudStorage.shutdown(), "TiCloudStorage.shutdown")
    print("disposed the device, shut TiCloudStorage down and stopped the server")
  }

  /// Decodes the first minute's video through `source → verify → demux → decoder → sink` and prints
  /// what the graph did.
  static func decodeMinute(of library: URL, from start: Int64) throws {
    let began = Date()
    let range = MediaRange(startMilliseconds: start, endMilliseconds: start + 60_000)
    let (frames, statistics) = try BenchCommand.decode(
      source: CloudSegmentSource(directory: library, range: range), range: range, channel: 0, threads: 1)
    let seconds = Date().timeIntervalSince(began)
    print("decoded the first minute through the graph: \(frames) frames in \(String(format: "%.2f", seconds)) s")
    print("  node                     items in  items out  busy ms")
    for node in statistics.nodes {
      let name = node.name.padding(toLength: 24, withPad: " ", startingAt: 0)
      print(
        "  \(name) \(pad(node.itemsIn, 9)) \(pad(node.itemsOut, 10)) \(pad(Int(node.busyNanoseconds / 1_000_000), 8))")
    }
  }

  /// Replays 00:00:55–00:01:30 in real time through a TiCloudStorageReplay with a Video and an Audio
  /// Output: at 4×, then 1/2× while a RecordingTask records, then a seek into the hole at 00:01:15 at 8×
  /// (the play goes on at the first frame after it); then a snapshot of the last frame presented. The
  /// files are kept in `demo` with names that start with `prefix`.
  static func replay(_ storage: TiCloudStorage, from start: Int64, into demo: URL, keeping prefix: String) throws {
    let replay = storage.createReplay(callbackThread: .background)
    let video = TiCloudStorageVideoOutput()
    let audio = TiCloudStorageAudioOutput()
    let view = FrameCounter()
    try FacadeSession.check(video.attachView(view), "attachView")
    try FacadeSession.check(video.attach(replay: replay, channelId: 0), "attach video")
    try FacadeSession.check(audio.attach(replay: replay, channelId: 1), "attach audio")
    let done = DispatchSemaphore(value: 0)
    replay.onRecordingGap = { gap in
      let tracks = gap.tracks.map { "\($0.kind == .video ? "video" : "audio") \($0.channelId)" }
      print(
        "  gap crossed: \(iso(gap.range.startTimeMs)) – \(iso(gap.range.endTimeMs)) "
          + "(\(tracks.joined(separator: ", "))): " + gap.reasons.map(\.name).joined(separator: ", "))
    }
    replay.onCompleted = { done.signal() }
    replay.onError = { code in
      print("  replay failed: \(TiCloudStorage.errorToString(code)) (\(code))")
      done.signal()
    }
    func position() -> String { replay.currentTimeMs.map(iso) ?? "–" }
    print("replay \(iso(start + 55_000)) – \(iso(start + 90_000)) in real time:")
    let dumpStart = FacadeSession.waitOnMain { done in
      replay.startRawDump(
        options: TiCloudStorageRawDumpOptions(audioChannelIds: [1], videoChannelIds: [0]), completion: done)
    }
    try FacadeSession.check(dumpStart.code, "startRawDump")
    let began = Date()
    try FacadeSession.check(replay.setSpeed(.x4), "setSpeed")
    try FacadeSession.check(replay.play(startTimeMs: start + 55_000, endTimeMs: start + 90_000), "play")
    Thread.sleep(forTimeInterval: 1)
    let size = "\(Int(video.renderSize.width))x\(Int(video.renderSize.height))"
    print("  4x for 1 s: at \(position()); video output \(video.state) \(size), audio output \(audio.state)")
    try FacadeSession.check(replay.setSpeed(.x0_5), "setSpeed")
    let recording = replay.startRecording(videoChannelId: 0, audioChannelId: 1)
    try FacadeSession.check(recording.code, "startRecording")
    Thread.sleep(forTimeInterval: 1)
    print("  1/2x for 1 s: at \(position())")
    try FacadeSession.check(replay.setSpeed(.x8), "setSpeed")
    try FacadeSession.check(replay.seek(toTimeMs: start + 75_000), "seek")
    print("  seek to \(iso(start + 75_000)) (inside the hole) at 8x")
    done.wait()
    print(
      "  completed at \(position()) after \(String(format: "%.1f", Date().timeIntervalSince(began))) s: "
        + "\(view.frames.load(ordering: .relaxed)) video frames rendered")
    if let task = recording.task {
      let recorded = FacadeSession.waitOnMain { done in task.stop(completion: done) }
      if let file = recorded.file {
        let kept = demo.appendingPathComponent("\(prefix)recording.mp4")
        try FacadeSession.move(file.path, to: kept)
        print(
          "  recorded what played from the next keyframe, the seek closed up: \(kept.path) (\(Double(file.durationMs) / 1000) s)"
        )
      } else {
        print("  the recording ended with \(TiCloudStorage.errorToString(recorded.code))")
      }
    }
    if let dump = dumpStart.dump {
      let dumped = FacadeSession.waitOnMain { done in dump.stop(completion: done) }
      try FacadeSession.check(dumped.code, "the raw dump's stop")
      print(
        "  raw dump of video 0 and audio 1 as read: \(dumped.files.count) files, "
          + "\(dumped.files.reduce(0) { $0 + $1.byteCount }) bytes in \(dumped.directoryPath)")
    }
    let snapshot = FacadeSession.waitOnMain { done in video.takeSnapshot(completion: done) }
    try FacadeSession.check(snapshot.code, "takeSnapshot")
    if let file = snapshot.file {
      let kept = demo.appendingPathComponent("\(prefix)snapshot.jpg")
      try FacadeSession.move(file.path, to: kept)
      print("  snapshot of the last frame: \(kept.path)")
    }
    // The documented teardown: stop, detach, detachView, dispose the Outputs and the Replay.
    for (code, what) in [
      (replay.stop(), "stop"), (video.detach(), "detach"), (audio.detach(), "detach"),
      (video.detachView(), "detachView"),
      (video.dispose(), "dispose"), (audio.dispose(), "dispose"), (replay.dispose(), "dispose"),
    ] {
      try FacadeSession.check(code, what)
    }
  }

  /// Exports `[start, end)` with a progress bar (on a terminal) and waits for its detailed result.
  static func export(_ storage: TiCloudStorage, from start: Int64, to end: Int64) throws -> TiCloudStorageExportResult {
    let terminal = isatty(STDOUT_FILENO) == 1
    let done = DispatchSemaphore(value: 0)
    let result = Locked<TiCloudStorageExportResult?>(nil)
    let started = storage.exportRecording(
      TiCloudStorageExportRequest(startTimeMs: start, endTimeMs: end, videoChannelId: 0, audioChannelId: 1),
      progress: { fraction in
        guard terminal else { return }
        let filled = Int(fraction * 40)
        print(
          "\r  " + String(repeating: "█", count: filled) + String(repeating: "·", count: 40 - filled)
            + String(format: " %5.1f%%", fraction * 100), terminator: "")
        fflush(nil)
      },
      progressDetail: nil, onRecordingGap: nil, callbackThread: .background,
      completion: { final in
        result.withLock { $0 = final }
        done.signal()
      })
    try FacadeSession.check(started.code, "exportRecording")
    done.wait()
    if terminal { print("") }
    return result.withLock { $0! }
  }

  /// Counts the frames a Video Output renders (the demo's host view).
  final class FrameCounter: VideoRenderer {
    let frames = Atomic(0)
    func render(_ frame: DecodedFrame) { frames.add(1, ordering: .relaxed) }
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
