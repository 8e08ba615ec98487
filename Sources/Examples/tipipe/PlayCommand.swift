import Dispatch
import Foundation
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// `tipipe play` (`spec/cli.md`): a Replay with null outputs, its events as JSON lines on stdout.
enum PlayCommand {
  static let summary = "replay [start, end) with null outputs; events as JSON lines"
  static let usage = """
    usage: tipipe play --endpoint E [--token K] --start T --end T [--initial T]
                       [--speed 1/8|1/4|1/2|1|2|4|8] --video-channel N [--audio-channel N]
                       [--pace realtime|fast] [--record OUT.mp4]

    Replays [start, end) of the recordings at E (http(s)://… with --token, or file:///DIR) from
    --initial (default: start) into a null renderer and a null audio device, and prints one JSON
    object per line: {"event":"time","ms":…} (at most one per 100 ms of media), {"event":"gap",…}
    when the position crosses a gap, {"event":"completed"} or {"event":"error","code":…,"name":…},
    and last {"event":"summary","video_frames":…,"audio_frames":…,"dropped_frames":…}.
    --pace fast runs the same semantics on a free-running clock, as fast as the machine allows.
    --record OUT.mp4 records what plays (a RecordingTask: from the first keyframe, source timing, the
    video channel and the audio channel's AAC) and prints {"event":"recording","code":…,"file":…,
    "duration_ms":…} before the summary; nothing recordable is noRecordableMedia (6119) and no file.
    SIGINT, SIGTERM and SIGHUP stop the replay (the summary is printed, exit 1).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--initial": .value,
        "--speed": .value, "--video-channel": .value, "--audio-channel": .value, "--pace": .value, "--quiet": .boolean,
        "--record": .value,
      ])
    let endpoint = try Endpoint(flags)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    let initial = try flags.time("--initial")
    guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
    let videoChannel = try flags.integer("--video-channel", default: 0, range: 0...255)
    let audioChannel =
      flags.string("--audio-channel") == nil ? nil : try flags.integer("--audio-channel", default: 0, range: 0...255)
    let speedText = flags.string("--speed") ?? "1"
    guard let speed = ReplaySpeed(speedText) else {
      throw UsageError(message: "--speed must be one of 1/8 1/4 1/2 1 2 4 8, not '\(speedText)'")
    }
    let pace = flags.string("--pace") ?? "realtime"
    guard ["realtime", "fast"].contains(pace) else { throw UsageError(message: "--pace must be realtime or fast") }
    let record = try flags.string("--record").map { try outputPath("--record", $0) }

    let events = DispatchQueue(label: "tipipe.play.events")
    let environment: ReplayEnvironment =
      pace == "fast" ? .freeRunning(callbacks: events) : .realtime(callbacks: events)
    let replay = Replay(service: endpoint.service, environment: environment)
    replay.bindVideo(channel: UInt8(videoChannel), renderer: NullRenderer())
    if let audioChannel { replay.bindAudio(channel: UInt8(audioChannel), device: NullAudioDevice()) }
    replay.setSpeed(speed)
    let finished = DispatchSemaphore(value: 0)
    let status = Locked<Int32>(0)
    replay.onTimeChanged = { ms in line("{\"event\":\"time\",\"ms\":\(ms)}") }
    replay.onRecordingGap = { gap in line(gapJSON(gap)) }
    replay.onCompleted = {
      line("{\"event\":\"completed\"}")
      finished.signal()
    }
    replay.onError = { error in
      line("{\"event\":\"error\",\"code\":\(error.code.rawValue),\"name\":\"\(error.code.name)\"}")
      reportError(error)
      status.withLock { $0 = 1 }
      finished.signal()
    }
    let code = replay.play(startTimeMs: start, endTimeMs: end, initialTimeMs: initial, token: endpoint.token)
    guard code == .ok else {
      throw TiError(code, code == .invalidArgument ? "--initial must lie in [--start, --end)" : "the play was refused")
    }
    let recorded = DispatchSemaphore(value: 0)
    let recording = Locked<String?>(nil)
    if let record {
      let recorder = ReplayRecorder(
        destination: record, videoTrack: TrackID(.video, channel: UInt8(videoChannel)),
        audioTrack: audioChannel.map { TrackID(.audio, channel: UInt8($0)) },
        startsAt: MediaTime(milliseconds: initial ?? start))
      let added = replay.addRecorder(recorder) { naturally in
        recorder.finish(playedToTheEnd: naturally) { result in
          let text: String
          switch result {
          case .success(let duration):
            text =
              "{\"event\":\"recording\",\"code\":0,\"file\":\(jsonString(record.path)),\"duration_ms\":\(duration)}"
          case .failure(let error):
            text =
              "{\"event\":\"recording\",\"code\":\(error.code.rawValue),\"name\":\"\(error.code.name)\",\"file\":null}"
          }
          recording.withLock { $0 = text }
          recorded.signal()
        }
      }
      if added != .ok {
        recording.withLock {
          $0 = "{\"event\":\"recording\",\"code\":\(added.rawValue),\"name\":\"\(added.name)\",\"file\":null}"
        }
        recorded.signal()
      }
    }
    Interruption.shared.onSignal { _ in
      events.async {
        replay.stop()
        status.withLock { $0 = 1 }
        finished.signal()
      }
    }
    finished.wait()
    Interruption.shared.removeHandler()
    replay.stop()
    if record != nil {
      recorded.wait()
      events.sync { line(recording.withLock { $0 ?? "" }) }
    }
    let figures = replay.statistics
    events.sync {
      line(
        "{\"event\":\"summary\",\"video_frames\":\(figures.videoFrames),\"audio_frames\":\(figures.audioFrames),"
          + "\"dropped_frames\":\(figures.droppedFrames)}")
    }
    return status.withLock { $0 }
  }

  /// `text` as a JSON string literal.
  static func jsonString(_ text: String) -> String {
    let data = (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
    return String(decoding: data, as: UTF8.self)
  }

  private static func line(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
  }

  static func gapJSON(_ gap: RecordingGap) -> String {
    let tracks = gap.tracks.map {
      "{\"kind\":\"\($0.kind == .video ? "video" : "audio")\",\"channel_id\":\($0.channel)}"
    }
    let reasons = gap.reasons.map { "\"\($0.rawValue)\"" }
    return
      "{\"event\":\"gap\",\"range\":{\"start_ms\":\(gap.range.start.milliseconds),\"end_ms\":\(gap.range.end.milliseconds)},"
      + "\"tracks\":[\(tracks.joined(separator: ","))],\"reasons\":[\(reasons.joined(separator: ","))]}"
  }
}

/// `tipipe snapshot` (`spec/cli.md`): the first frame presented at `--at`, as a JPEG.
enum SnapshotCommand {
  static let summary = "the first frame presented at a time, as a JPEG of the frame's size"
  static let usage = """
    usage: tipipe snapshot --endpoint E [--token K] --at T --video-channel N --out FILE.jpg

    Seeks to T as Replay does and writes the first frame presented there — the first playable frame
    whose time is not earlier than T (inside a gap: the first frame after it) — as a JPEG of the
    frame's own size. The file is written under a temporary name and renamed into place. Looks up to
    24 hours past T; nothing there is noFrame (6118), exit 1. Runs through the SDK facade (a Replay,
    a Video Output and its takeSnapshot) with its work root in --cache DIR (default ~/.cache/tirtc).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--endpoint": .value, "--token": .value, "--at": .value, "--video-channel": .value, "--out": .value,
        "--cache": .value,
      ])
    let endpoint = try flags.required("--endpoint")
    let token = try Endpoint(flags).token
    guard let at = try flags.time("--at") else { throw UsageError(message: "--at is required") }
    guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
    let channel = try flags.integer("--video-channel", default: 0, range: 0...255)
    let out = try outputPath("--out", try flags.required("--out"))
    let end = min(at + 86_400_000, MediaTime.validMilliseconds.upperBound)
    let cache = FacadeSession.cacheDirectory(flags)
    FacadeSession.runOffMain {
      let storage = try FacadeSession.open(endpoint: endpoint, token: token, cache: cache)
      defer { FacadeSession.close(storage) }
      try snapshot(storage, at: at, end: end, channel: UInt8(channel), to: out)
      return 0
    }
  }

  /// Through the facade: a Replay paused as soon as it plays shows the first frame of `at` and holds it
  /// (R35), and the Video Output's snapshot is that frame. (Exits 1 if the play ends before a frame.)
  static func snapshot(_ storage: TiCloudStorage, at: Int64, end: Int64, channel: UInt8, to out: URL) throws {
    let replay = storage.createReplay(callbackThread: .background)
    let video = TiCloudStorageVideoOutput()
    let view = FirstFrame()
    let failure = Locked<Int32?>(nil)
    defer {
      _ = replay.stop()
      _ = video.detach()
      _ = video.detachView()
      _ = video.dispose()
      _ = replay.dispose()
    }
    try DemoCommand.check(video.attachView(view), "attachView")
    try DemoCommand.check(video.attach(replay: replay, channelId: channel), "attach")
    replay.onError = { code in
      failure.withLock { $0 = code }
      view.finished.signal()
    }
    replay.onCompleted = { view.finished.signal() }
    let code = replay.play(startTimeMs: at, endTimeMs: end)
    guard code == TiCloudStorageErrorCode.ok else { throw FacadeSession.error(code, "the replay was refused") }
    _ = replay.pause()
    view.finished.wait()
    if let code = failure.withLock({ $0 }) { throw FacadeSession.error(code, "the replay failed") }
    guard view.frame != nil else { throw TiError(.noFrame, "no frame is presented within 24 hours after \(at)") }
    var taken = FacadeSession.waitOnMain { done in video.takeSnapshot(completion: done) }
    // The pause came after a second frame: a seek while paused shows the target's frame alone (R35).
    for _ in 0..<3 where view.rendered > 1 && taken.code == TiCloudStorageErrorCode.ok {
      if let file = taken.file { _ = FacadeSession.waitOnMain { done in file.delete(completion: done) } }
      view.restart()
      _ = replay.seek(toTimeMs: at)
      view.finished.wait()
      taken = FacadeSession.waitOnMain { done in video.takeSnapshot(completion: done) }
    }
    guard taken.code == TiCloudStorageErrorCode.ok, let file = taken.file else {
      throw FacadeSession.error(taken.code, "the snapshot failed")
    }
    defer { _ = FacadeSession.waitOnMain { done in file.delete(completion: done) } }
    do {
      try OutputFile.write(try Data(contentsOf: URL(fileURLWithPath: file.path)), to: out)
    } catch let error as TiError {
      throw TiError(.fileWriteFailed, error.message)
    }
  }

  /// Keeps the first frame presented and says so.
  final class FirstFrame: VideoRenderer, @unchecked Sendable {
    /// Signalled by each frame, and by the play's end.
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var first: DecodedFrame?
    private var count = 0
    var frame: DecodedFrame? { lock.withLock { first } }
    /// Frames rendered since the last ``restart()``.
    var rendered: Int { lock.withLock { count } }

    func restart() { lock.withLock { count = 0 } }

    func render(_ frame: DecodedFrame) {
      lock.withLock {
        count += 1
        if first == nil { first = frame }
      }
      finished.signal()
    }
  }
}
