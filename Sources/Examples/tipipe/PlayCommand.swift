import DesktopOutputs
import Dispatch
import Foundation
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// `tipipe play` (`spec/cli.md`): a Replay (or a file) into null outputs or a window and the speakers, its
/// events as JSON lines on stdout.
enum PlayCommand {
  static let summary = "replay [start, end) or a file: null outputs, a window (--window), a recording; JSON lines"
  static let usage = """
    usage: tipipe play --endpoint E [--token K] --start T --end T [--initial T]
                       [--speed 1/8|1/4|1/2|1|2|4|8] --video-channel N [--audio-channel N]
                       [--pace realtime|fast] [--record OUT.mp4] [--window [--window-size WxH]]
           tipipe play --input FILE --window [--window-size WxH] [--start S] [--speed …] [--no-audio]

    Replays [start, end) of the recordings at E (http(s)://… with --token, or file:///DIR) from
    --initial (default: start) into a null renderer and a null audio device, and prints one JSON
    object per line: {"event":"time","ms":…} (at most one per 100 ms of media), {"event":"gap",…}
    when the position crosses a gap, {"event":"completed"} or {"event":"error","code":…,"name":…},
    and last {"event":"summary","video_frames":…,"audio_frames":…,"dropped_frames":…,"late_frames":…}.
    --pace fast runs the same semantics on a free-running clock, as fast as the machine allows.
    --record OUT.mp4 records what plays (a RecordingTask: from the first keyframe, source timing, the
    video channel and the audio channel, G.711 as AAC) and prints {"event":"recording","code":…,"file":…,
    "duration_ms":…} before the summary; nothing recordable is noRecordableMedia (6119) and no file
    (a recording not made is exit 1 with its error line).
    OUT.mp4 may not lie in the cache directory nor name a file of a file:// library; if it is no
    longer a regular file at the end (a directory, a FIFO, a link), it is not replaced: the line has code
    fileWriteFailed (6046) and "kept", the recording's path in the cache (exit 1).
    SIGINT, SIGTERM and SIGHUP stop the replay (the summary is printed, exit 1).
    --window shows the video in a window (SDL2, --window-size WxH, default 960x540; needs a display:
    without one, an error line and exit 2) and plays the audio channel on SDL's audio (no audio
    driver: an error line and exit 2; SDL_AUDIODRIVER=disk writes the samples to SDL_DISKAUDIOFILE)
    and takes keys: space pauses and resumes ({"event":"paused","ms":…} names the frame on screen),
    left/right seek 10 s, up/down 60 s, + and - step the speed through 1/8…8 ({"event":"speed",…}),
    . and , show the next and the previous frame while paused ({"event":"step","ms":…}), s saves a
    snapshot in the cache ({"event":"snapshot","code":…,"file":…}), f fullscreen, q or Esc quit (the
    summary is printed, exit 0); the title shows the play's time and speed, the bar under the picture
    the range (dark grey), its unrecorded stretches as listed and the gaps crossed (red), what played
    (lighter grey) and where the play is (white).
    With --input, plays a media file (MP4, MOV, MKV, MPEG-TS, raw H.264/H.265/AAC) in the window from S
    seconds of its start (12.5, 1:02.5), its audio on SDL's audio (--no-audio: none), with the same keys
    and lines (times in ms from the file's start: the picture's, or the sound's where no picture was
    shown for 300 ms of it: before the picture starts, after it ends); s saves snapshot-<ms>.jpg in
    --cache DIR.
    {"event":"window","x":…,"y":…,"width":…,"height":…} says where its drawing area is on the screen.
    An S at or after the file's end is a usage error (exit 2) before any window opens; a track in a
    codec not read (MP3, Opus, VP9…) is said in a warning.
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    if arguments.contains("--input") { return try FilePlayCommand.run(arguments) }
    // Parsed in a closure of its own: nothing of the parser stays in this frame, which the main thread
    // keeps while it runs the main queue (LeakSanitizer would report it).
    let (endpoint, token, start, end, initial, videoChannel, audioChannel, speed, pace, record, cache, window) = try {
      () throws -> (
        String, String, Int64, Int64, Int64?, UInt8, UInt8?, ReplaySpeed, TiCloudStorageReplayPace, URL?, URL,
        (width: Int, height: Int)?
      ) in
      let flags = try FlagParser(
        arguments,
        known: [
          "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--initial": .value,
          "--speed": .value, "--video-channel": .value, "--audio-channel": .value, "--pace": .value,
          "--quiet": .boolean, "--window": .boolean, "--window-size": .value,
          "--record": .value, "--cache": .value,
        ])
      let endpoint = try flags.required("--endpoint")
      let token = try Endpoint(flags).token
      guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
      guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
      guard start < end else { throw UsageError(message: "--start must be before --end") }
      let initial = try flags.time("--initial")
      if let initial, !(start..<end).contains(initial) {
        throw UsageError(message: "--initial must lie in [--start, --end)")
      }
      guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
      let videoChannel = UInt8(try flags.integer("--video-channel", default: 0, range: 0...255))
      let audioChannel =
        flags.string("--audio-channel") == nil
        ? nil : UInt8(try flags.integer("--audio-channel", default: 0, range: 0...255))
      let speed = try PlayCommand.speed(flags)
      let paceText = flags.string("--pace") ?? "realtime"
      guard ["realtime", "fast"].contains(paceText) else {
        throw UsageError(message: "--pace must be realtime or fast")
      }
      let pace: TiCloudStorageReplayPace = paceText == "fast" ? .asFastAsPossible : .realtime
      let cache = try FacadeSession.cacheDirectory(flags)
      let record = try flags.string("--record").map {
        try outputPath("--record", $0, cache: cache, endpoint: endpoint)
      }
      return (
        endpoint, token, start, end, initial, videoChannel, audioChannel, speed, pace, record, cache,
        try windowSize(flags)
      )
    }()
    // The window first: without a display nothing else is worth starting.
    let screen: SDLWindow?
    do {
      screen = try window.map { try SDLWindow(title: "tipipe play", width: $0.width, height: $0.height) }
    } catch {
      throw UsageError(message: "--window: \(error)")
    }
    // Sound with the picture: the window's play plays its audio channel on SDL's audio.
    let speaker: SDLAudioDevice?
    do {
      speaker = screen != nil && audioChannel != nil ? try SDLAudioDevice() : nil
    } catch {
      throw UsageError(message: "--window: \(error)")
    }
    // A play that cannot start still ends with its error event and a summary (cli.md).
    let failureLines = { @Sendable (error: TiError) in
      [
        "{\"event\":\"error\",\"code\":\(error.code.rawValue),\"name\":\"\(error.code.name)\"}",
        "{\"event\":\"summary\",\"video_frames\":0,\"audio_frames\":0,\"dropped_frames\":0,\"late_frames\":0,"
          + "\"render_size\":{\"width\":0,\"height\":0}}",
      ]
    }
    FacadeSession.run(endpoint: endpoint, token: token, cache: cache, failureLines: failureLines) { storage in
      // Closed before the session ends the process (SDL's window and audio device, and their threads).
      defer {
        speaker?.close()
        screen?.close()
      }
      let play = Play(
        storage: storage, pace: pace, speed: speed, videoChannel: videoChannel, audioChannel: audioChannel,
        screen: screen, speaker: speaker)
      return try play.run(start: start, end: end, initial: initial, record: record)
    }
  }

  /// One play through the facade: a Replay with callbacks on the main queue (one order for every line),
  /// a Video and an Audio Output drawing nothing and counting, a RecordingTask for `--record`.
  final class Play: TiCloudStorageVideoOutputDelegate, TiCloudStorageAudioOutputDelegate, @unchecked Sendable {
    let storage: TiCloudStorage
    let replay: TiCloudStorageReplay
    let video = TiCloudStorageVideoOutput()
    /// The Audio Output and its channel, when the play has audio.
    let audio: (output: TiCloudStorageAudioOutput, channel: UInt8)?
    let view: CountingRenderer
    let device: CountingAudioDevice
    /// The window the video is shown in (`--window`).
    let screen: SDLWindow?
    let finished = DispatchSemaphore(value: 0)
    let status = Locked<Int32>(0)
    let videoChannel: UInt8

    init(
      storage: TiCloudStorage, pace: TiCloudStorageReplayPace, speed: ReplaySpeed, videoChannel: UInt8,
      audioChannel: UInt8?, screen: SDLWindow?, speaker: SDLAudioDevice?
    ) {
      self.storage = storage
      replay = storage.createReplay(callbackThread: .main, pace: pace)
      view = CountingRenderer(showingOn: screen)
      device = CountingAudioDevice(playingOn: speaker)
      self.screen = screen
      let device = self.device
      audio = audioChannel.map { (TiCloudStorageAudioOutput(device: device), $0) }
      self.videoChannel = videoChannel
      _ = replay.setSpeed(speed)
    }

    func run(start: Int64, end: Int64, initial: Int64?, record: URL?) throws -> Int32 {
      let replay = self.replay
      defer {
        // The teardown's state changes are not the play's: no line after the summary.
        screen?.onCommand = nil
        video.delegate = nil
        audio?.output.delegate = nil
        _ = replay.stop()
        _ = video.detach()
        _ = video.detachView()
        _ = video.dispose()
        if let (output, _) = audio {
          _ = output.detach()
          _ = output.dispose()
        }
        _ = replay.dispose()
      }
      video.delegate = self
      try FacadeSession.check(video.attachView(view), "attachView")
      try FacadeSession.check(video.attach(replay: replay, channelId: videoChannel), "attach video")
      if let (output, channel) = audio {
        output.delegate = self
        try FacadeSession.check(output.attach(replay: replay, channelId: channel), "attach audio")
      }
      let keys = screen.map {
        WindowKeys(play: ReplayWindowPlay(replay: replay, video: video, finished: self.finished), screen: $0)
      }
      keys?.start()
      keys?.setRange(fromMs: start, toMs: end)
      if let keys {
        // The bar shows what is not recorded from the start (the listing), and each gap as it is crossed.
        storage.listRecordings(startTimeMs: start, endTimeMs: end) { result in
          guard result.code == TiCloudStorageErrorCode.ok else { return }
          keys.recorded(result.recordings.map { ($0.startTimeMs, $0.endTimeMs) })
        }
      }
      replay.onTimeChanged = { ms in
        PlayCommand.line("{\"event\":\"time\",\"ms\":\(ms)}")
        keys?.timeChanged(ms)
      }
      replay.onRecordingGap = { gap in
        PlayCommand.line(PlayCommand.gapJSON(gap))
        keys?.gap(fromMs: gap.range.startTimeMs, toMs: gap.range.endTimeMs)
      }
      let finished = self.finished
      let status = self.status
      replay.onCompleted = {
        PlayCommand.line("{\"event\":\"completed\"}")
        finished.signal()
      }
      replay.onError = { code in
        let name = TiCloudStorage.errorToString(code)
        PlayCommand.line("{\"event\":\"error\",\"code\":\(code),\"name\":\"\(name)\"}")
        reportError(FacadeSession.error(code, "the replay failed"))
        status.withLock { $0 = 1 }
        finished.signal()
      }
      let code = replay.play(startTimeMs: start, endTimeMs: end, initialTimeMs: initial)
      guard code == TiCloudStorageErrorCode.ok else {
        throw FacadeSession.error(
          code, code == TiCloudStorageErrorCode.invalidArgument ? "--initial must lie in [--start, --end)" : nil)
      }
      let task = record.map { _ in
        replay.startRecording(videoChannelId: Int(videoChannel), audioChannelId: audio.map { Int($0.channel) })
      }
      let interruption = Locked<Int32?>(nil)
      Interruption.shared.onSignal { signal in
        interruption.withLock { $0 = $0 ?? signal }
        DispatchQueue.main.async {
          _ = replay.stop()
          status.withLock { $0 = 1 }
          finished.signal()
        }
      }
      finished.wait()
      Interruption.shared.removeHandler()
      // A signal ends the play with its error event too (one of completed or error per play), after what
      // the main queue still had to print.
      if interruption.withLock({ $0 }) != nil && PlayCommand.outputFailure.withLock({ $0 }) == nil {
        FacadeSession.waitOnMain { done in DispatchQueue.main.async { done(()) } }
        PlayCommand.line("{\"event\":\"error\",\"code\":6115,\"name\":\"cancelled\"}")
      }
      if let record, let task {
        PlayCommand.line(recordingLine(task, to: record))
      }
      // The main queue has run every callback queued before this line.
      FacadeSession.waitOnMain { done in DispatchQueue.main.async { done(()) } }
      PlayCommand.line(
        "{\"event\":\"summary\",\"video_frames\":\(view.frames.load(ordering: .relaxed)),"
          + "\"audio_frames\":\(audioFrames),\"dropped_frames\":\(replay.droppedVideoFrames),"
          + "\"late_frames\":\(replay.lateVideoFrames),"
          + "\"render_size\":{\"width\":\(Int(video.renderSize.width)),\"height\":\(Int(video.renderSize.height))}}")
      // An exit status of 1 comes with its error line (cli.md): the lost output, or the cancelling signal.
      if let signal = interruption.withLock({ $0 }) {
        reportError(PlayCommand.outputFailure.withLock { $0 } ?? Interruption.cancellation(by: signal))
      }
      return status.withLock { $0 }
    }

    private var audioFrames: Int { device.frames.load(ordering: .relaxed) }

    /// The RecordingTask's result, its file moved to `record`.
    private func recordingLine(_ started: TiCloudStorageRecordingTaskStartResult, to record: URL) -> String {
      // A recording asked for and not made is a failed operation: exit 1 with its error line (unless the
      // play's own failure has one already: one error line per run).
      func failure(_ code: Int32) -> String {
        if status.withLock({ $0 }) == 0 {
          reportError(FacadeSession.error(code, "the recording was not made: \(TiCloudStorage.errorToString(code))"))
          status.withLock { $0 = 1 }
        }
        return
          "{\"event\":\"recording\",\"code\":\(code),\"name\":\"\(TiCloudStorage.errorToString(code))\",\"file\":null}"
      }
      guard let task = started.task else {
        // The play ran out before a task could start (a range with nothing in it, on a fast clock):
        // nothing was recordable.
        let ranOut = started.code == TiCloudStorageErrorCode.notStarted && status.withLock { $0 } == 0
        return failure(ranOut ? TiCloudStorageErrorCode.noRecordableMedia : started.code)
      }
      let result = FacadeSession.waitOnMain { done in task.stop(completion: done) }
      guard result.code == TiCloudStorageErrorCode.ok, let file = result.file else { return failure(result.code) }
      do {
        try FacadeSession.move(file.path, to: record)
      } catch {
        // `--record` was replaced by something that is not a regular file while the play ran: that is
        // not replaced, and the recording is kept in the cache (its path in the line).
        let error = TiError(error)
        if status.withLock({ $0 }) == 0 {
          reportError(TiError(error.code, "\(error.message); the recording is kept at \(file.path)"))
          status.withLock { $0 = 1 }
        }
        return
          "{\"event\":\"recording\",\"code\":\(error.code.rawValue),\"name\":\"\(error.code.name)\",\"file\":null,"
          + "\"kept\":\(PlayCommand.jsonString(file.path)),\"duration_ms\":\(file.durationMs)}"
      }
      return
        "{\"event\":\"recording\",\"code\":0,\"file\":\(PlayCommand.jsonString(record.path)),\"duration_ms\":\(file.durationMs)}"
    }

    func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeState state: TiCloudStorageVideoOutputState) {
      PlayCommand.line("{\"event\":\"output_state\",\"output\":\"video\",\"state\":\"\(state)\"}")
    }

    func audioOutput(_ output: TiCloudStorageAudioOutput, didChangeState state: TiCloudStorageAudioOutputState) {
      PlayCommand.line("{\"event\":\"output_state\",\"output\":\"audio\",\"state\":\"\(state)\"}")
    }
  }

  /// `--speed` (default 1).
  static func speed(_ flags: FlagParser) throws -> ReplaySpeed {
    let text = flags.string("--speed") ?? "1"
    guard let speed = ReplaySpeed(text) else {
      throw UsageError(message: "--speed must be one of 1/8 1/4 1/2 1 2 4 8, not '\(text)'")
    }
    return speed
  }

  /// `--window` and `--window-size WxH` (16…16384 each; default 960x540); nil without `--window`.
  static func windowSize(_ flags: FlagParser) throws -> (width: Int, height: Int)? {
    guard flags.has("--window") else {
      if flags.string("--window-size") != nil { throw UsageError(message: "--window-size needs --window") }
      return nil
    }
    guard let text = flags.string("--window-size") else { return (960, 540) }
    let parts = text.split(separator: "x", omittingEmptySubsequences: false)
    guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), (16...16384).contains(width),
      (16...16384).contains(height)
    else { throw UsageError(message: "--window-size must be WIDTHxHEIGHT (16…16384 each), not '\(text)'") }
    return (width, height)
  }

  /// Counts the frames a Video Output presents, and shows them in the window when there is one.
  final class CountingRenderer: VideoRenderer {
    let frames = Atomic(0)
    let screen: SDLWindow?
    init(showingOn screen: SDLWindow?) { self.screen = screen }
    func render(_ frame: DecodedFrame) {
      frames.add(1, ordering: .relaxed)
      screen?.render(frame)
    }
  }

  /// Counts the audio frames an Audio Output plays, and plays them on the speaker when there is one.
  final class CountingAudioDevice: AudioDevice {
    let frames = Atomic(0)
    let speaker: SDLAudioDevice?
    init(playingOn speaker: SDLAudioDevice?) { self.speaker = speaker }
    func play(_ frame: DecodedFrame, volume: Int) {
      frames.add(1, ordering: .relaxed)
      speaker?.play(frame, volume: volume)
    }
    /// The speaker's: the play's clock follows it (nil without one: the monotonic clock alone).
    var latency: MediaDuration? { speaker?.latency }
    func setPaused(_ paused: Bool) { speaker?.setPaused(paused) }
    func flush() { speaker?.flush() }
    func align(nextFrameIn delay: MediaDuration) { speaker?.align(nextFrameIn: delay) }
  }

  /// `text` as a JSON string literal.
  static func jsonString(_ text: String) -> String {
    let encoder = JSONEncoder()
    // Paths read as paths ("/tmp/a", not "\/tmp\/a"): both are JSON, one is for people.
    encoder.outputFormatting = .withoutEscapingSlashes
    return String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
  }

  /// The first write of a line that failed (standard output is gone): the play stops as on a signal,
  /// and the command ends with this error.
  static let outputFailure = Locked<TiError?>(nil)

  /// Writes one JSON line; a failure stops the play (SIGPIPE is handled like the cancelling signals).
  static func line(_ text: String) {
    guard let error = StandardOutput.write(Data((text + "\n").utf8)) else { return }
    let first = outputFailure.withLock { failure in
      defer { if failure == nil { failure = error } }
      return failure == nil
    }
    if first { Interruption.shared.deliver(SIGPIPE) }
  }

  static func gapJSON(_ gap: TiCloudStorageRecordingGap) -> String {
    let tracks = gap.tracks.map {
      "{\"kind\":\"\($0.kind == .video ? "video" : "audio")\",\"channel_id\":\($0.channelId)}"
    }
    let reasons = gap.reasons.map { "\"\($0.name)\"" }
    return
      "{\"event\":\"gap\",\"range\":{\"start_ms\":\(gap.range.startTimeMs),\"end_ms\":\(gap.range.endTimeMs)},"
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
    if arguments.contains("--input") { return try FilePlayCommand.run(arguments) }
    // Parsed in a closure of its own: nothing of the parser stays in this frame, which the main thread
    // keeps while it runs the main queue (LeakSanitizer would report it).
    let (endpoint, token, at, end, channel, out, cache) = try {
      () throws -> (String, String, Int64, Int64, Int, URL, URL) in
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
      let cache = try FacadeSession.cacheDirectory(flags)
      let out = try outputPath("--out", try flags.required("--out"), cache: cache, endpoint: endpoint)
      let end = min(at + 86_400_000, MediaTime.validMilliseconds.upperBound)
      return (endpoint, token, at, end, channel, out, cache)
    }()
    FacadeSession.run(endpoint: endpoint, token: token, cache: cache) { storage in
      // Most snapshots find their frame in the first seconds: a play that ends there reads nothing
      // beyond (a play of 24 hours reads objects ahead, 8 MB of them, hashing each: ~7 % of the
      // command). Only when nothing is there (a gap) does the day after get played.
      let near = min(at + snapshotReach, end)
      do {
        try snapshot(storage, at: at, end: near, channel: UInt8(channel), to: out)
      } catch let error as TiError where error.code == .noFrame && near < end {
        try snapshot(storage, at: at, end: end, channel: UInt8(channel), to: out)
      }
      return 0
    }
  }

  /// How far after `--at` a snapshot first looks for its frame (ms): a second, a frame's time at 1 fps
  /// (the range's objects are read whole: a longer reach reads the next object too).
  static let snapshotReach: Int64 = 1_000

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
    try FacadeSession.check(video.attachView(view), "attachView")
    try FacadeSession.check(video.attach(replay: replay, channelId: channel), "attach")
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
    guard view.frame != nil else {
      throw TiError(.noFrame, "no frame is presented within \((end - at) / 1000) s after \(at)")
    }
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
    } catch let error as MediaError {
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
