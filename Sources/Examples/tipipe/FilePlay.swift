import DesktopOutputs
import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe play --input FILE --window`: a media file played in the window, as a graph of the library's
/// nodes — `MediaFileSource → FrameDecoder → (VideoRotator) → Pacer → PresentationSink` for the video and, with a
/// speaker, the same for the audio — one timeline for both, on a thread of its own, on a clock that
/// follows the speaker (`SlewedClock`: the audio is handed over `Pacer.audioLead` ahead). Pause and speed
/// go to the pacers (and pause to the speaker); a seek flushes the graph to the target (the source seeks to
/// the keyframe before it, the pacers show from the target) and the speaker. Lines go out on the main
/// queue, in one order.
final class FilePlay: WindowPlay, @unchecked Sendable {
  private struct State {
    var speed: ReplaySpeed
    var position: MediaTime?
    var reported: MediaTime?
    /// The last time line came from the sound (handed 100 ms ahead of the clock).
    var reportedBySound = false
    /// Where the last picture shown since the start or the last seek ends.
    var pictureEnd: MediaTime?
    /// The first sound frame presented since the start or the last seek.
    var soundSince: MediaTime?
    var videoFrames = 0
    var audioFrames = 0
    var ended = false
  }

  private let executor = ThreadExecutor(name: "tipipe.play")
  private let pipeline: Pipeline
  private let pacers: [Pacer]
  private let screen: SDLWindow
  /// Paused with the play and flushed by a seek.
  private let speaker: SDLAudioDevice?
  private let snapshots: URL
  private let state: Locked<State>
  /// Signalled when the play ends: its end, a failure, `q`.
  let finished = DispatchSemaphore(value: 0)
  /// The failure that ended the play, if one did.
  private let failure = Locked<TiError?>(nil)
  /// Called on the main queue with each time line's ms (the window's title and bar).
  let onTime = Locked<(@Sendable (Int64) -> Void)?>(nil)

  /// A play of `path` from `start` (the file's own time; nil: its start) at `speed`, shown on `screen`
  /// (turned as `turn` says: what its headers say) and heard on `speaker`; snapshots go to `snapshots`.
  /// The time lines follow the picture (`hasVideo`), or the sound: in a file of sound alone, and where
  /// no picture was shown for 300 ms of the sound (a picture that starts after its sound, or ends before
  /// it).
  init(
    path: String, hasVideo: Bool = true, turn: PictureTurn?, start: MediaTime?, speed: ReplaySpeed,
    screen: SDLWindow, speaker: SDLAudioDevice?, snapshots: URL
  )
    throws
  {
    self.screen = screen
    self.speaker = speaker
    self.snapshots = snapshots
    let state = Locked(State(speed: speed))
    self.state = state
    let onTime = self.onTime
    // The monotonic clock, following the speaker's own (the audio master clock).
    let clock = SlewedClock(base: MonotonicClock())
    let pipeline = Pipeline(executor: executor, clock: clock)
    self.pipeline = pipeline
    // Times from the file's start: the title, the lines and --start all count from there.
    let source = MediaFileSource(path: path, startTime: MediaTime(microseconds: 0))
    let tracks = Set([source.videoTrack] + (speaker == nil ? [] : [source.audioTrack]))
    let timeline = PlaybackTimeline(tracks: tracks, rate: speed.rate, startLatency: PlaybackTimeline.playerStartLatency)
    // One decoding thread, as the Replay: a seek's or a step's picture comes out with its own packet.
    let videoDecoder = try FrameDecoder(name: "VideoDecoder", track: source.videoTrack, threads: 1)
    let videoPacer = Pacer(
      name: "VideoPacer", rate: speed.rate, presentFrom: start, showsFirstFrameAfterSeek: true, timeline: timeline)
    // The position: at most one time line per 100 ms of media, as `tipipe play` prints them. It follows
    // the picture; the sound in a file of sound alone, and where no picture was shown for 300 ms of the
    // sound (a picture starting after its sound, or ending before it: the lines and the title stood still
    // while the sound played on).
    let presented = { @Sendable (time: MediaTime, duration: MediaDuration, bySound: Bool) in
      let report = state.withLock { state -> Int64? in
        if bySound && hasVideo {
          let since = state.soundSince ?? time
          state.soundSince = since
          let quiet = max(since, state.pictureEnd ?? since)
          guard ((try? time - quiet) ?? .zero) >= .microseconds(300_000) else { return nil }
        } else if !bySound {
          let after = state.reportedBySound
          state.pictureEnd = time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
          state.position = time
          // The first picture after the sound's lines (handed 100 ms ahead) does not go back over them.
          if after, let reported = state.reported, time < reported { return nil }
        }
        state.position = time
        guard state.reported.map({ (try? time - $0)?.microseconds ?? 0 >= 100_000 || time < $0 }) ?? true
        else { return nil }
        state.reported = time
        state.reportedBySound = bySound
        // (A sound frame the file's start cuts into begins a few ms before 0.)
        return max(0, time.milliseconds)
      }
      if let report {
        DispatchQueue.main.async {
          PlayCommand.line("{\"event\":\"time\",\"ms\":\(report)}")
          onTime.withLock { $0 }?(report)
        }
      }
    }
    let videoSink = PresentationSink(
      name: "VideoOutput",
      onFrame: { frame, _ in
        screen.render(frame)
        state.withLock { $0.videoFrames += 1 }
        presented(frame.time, frame.duration, false)
      })
    pipeline.connect(source, to: videoDecoder, limits: EdgeLimits(items: 64, bytes: 8 << 20))
    // A phone's recording is shown upright, as its container says (and its snapshots taken so).
    if let turn {
      let rotator = VideoRotator(turn: turn)
      pipeline.connect(videoDecoder, to: rotator, limits: EdgeLimits(items: 2))
      pipeline.connect(rotator, to: videoPacer, limits: EdgeLimits(items: 4))
    } else {
      pipeline.connect(videoDecoder, to: videoPacer, limits: EdgeLimits(items: 4))
    }
    pipeline.connect(videoPacer, to: videoSink, limits: EdgeLimits(items: 2))
    var pacers = [videoPacer]
    var decoderIDs = [ObjectIdentifier(videoDecoder)]
    if let speaker {
      let audioDecoder = try FrameDecoder(name: "AudioDecoder", track: source.audioTrack, threads: 1)
      decoderIDs.append(ObjectIdentifier(audioDecoder))
      let audioPacer = Pacer(
        name: "AudioPacer", rate: speed.rate, presentFrom: start, timeline: timeline, prerolls: false,
        lead: Pacer.audioLead)
      let audioSink = PresentationSink(
        name: "AudioOutput",
        onFrame: { frame, _ in
          // Sound at 1× only, as the Replay's Audio Output.
          presented(frame.time, frame.duration, true)
          guard
            state.withLock({ state in
              state.audioFrames += 1
              return state.speed == .x1
            })
          else { return }
          speaker.play(frame, volume: 100, in: timeline, following: clock)
        },
        // On the executor, in order with the frames: nothing from before a seek is heard after it.
        onFlush: { speaker.flush() })
      pipeline.connect(source, to: audioDecoder, limits: EdgeLimits(items: 256, bytes: 8 << 20))
      pipeline.connect(audioDecoder, to: audioPacer, limits: EdgeLimits(items: 16))
      pipeline.connect(audioPacer, to: audioSink, limits: EdgeLimits(items: 4))
      pacers.append(audioPacer)
    }
    self.pacers = pacers
    let finished = self.finished
    let failure = self.failure
    let decoders = Set(decoderIDs)
    pipeline.errorHandler = { node in
      // A damaged packet costs its own frames, as ffmpeg (and `record --input`) skips it.
      if FrameDecoder.isDamagedPacket(node, from: decoders) { return .resume }
      failure.withLock { $0 = $0 ?? TiError(node) }
      finished.signal()
      return .stopPipeline
    }
    pipeline.onEndOfStream = { _ in
      state.withLock { $0.ended = true }
      finished.signal()
    }
    if let start { _ = pipeline.flush(seekingTo: start) }
  }

  /// Plays until the file ends, a failure or `stop()`; prints `completed` or the error line, then the
  /// summary; returns the exit status.
  func run() throws -> Int32 {
    try pipeline.start()
    finished.wait()
    pipeline.stop()
    executor.shutdown()
    let (ended, video, audio) = state.withLock { ($0.ended, $0.videoFrames, $0.audioFrames) }
    let error = failure.withLock { $0 }
    FacadeSession.waitOnMain { done in DispatchQueue.main.async { done(()) } }
    if let error {
      PlayCommand.line("{\"event\":\"error\",\"code\":\(error.code.rawValue),\"name\":\"\(error.code.name)\"}")
    } else if ended {
      PlayCommand.line("{\"event\":\"completed\"}")
    }
    let dropped = pacers.first?.statistics.dropped.load(ordering: .relaxed) ?? 0
    let late = pacers.first?.statistics.late.load(ordering: .relaxed) ?? 0
    PlayCommand.line(
      "{\"event\":\"summary\",\"video_frames\":\(video),\"audio_frames\":\(audio),\"dropped_frames\":\(dropped),\"late_frames\":\(late)}"
    )
    if let error { throw error }
    return 0
  }

  var speed: ReplaySpeed { state.withLock { $0.speed } }
  var positionMs: Int64? { state.withLock { $0.position?.milliseconds } }
  func pause() {
    for pacer in pacers { pacer.pause() }
    speaker?.setPaused(true)
  }
  func resume() {
    for pacer in pacers { pacer.resume() }
    speaker?.setPaused(false)
  }

  func seek(toMs ms: Int64) {
    state.withLock { state in
      state.reported = nil
      state.pictureEnd = nil
      state.soundSince = nil
    }
    speaker?.flush()
    guard let target = MediaTime(checkedMilliseconds: max(0, ms)) else { return }
    _ = pipeline.flush(seekingTo: target)
  }

  func setSpeed(_ speed: ReplaySpeed) {
    state.withLock { $0.speed = speed }
    for pacer in pacers { pacer.setRate(speed.rate) }
  }

  func stop() { finished.signal() }

  /// Ends the play as cancelled by `signal`.
  func interrupt(by signal: Int32) {
    failure.withLock { $0 = $0 ?? Interruption.cancellation(by: signal) }
    finished.signal()
  }

  /// The frame on screen as a JPEG in the snapshot directory (`snapshot-<ms>.jpg`, written under a
  /// temporary name and renamed).
  func snapshot(_ done: @escaping @Sendable (String) -> Void) {
    guard let frame = screen.lastFrame else {
      return done("{\"event\":\"snapshot\",\"code\":\(TiErrorCode.noFrame.rawValue),\"file\":null}")
    }
    let file = snapshots.appendingPathComponent("snapshot-\(frame.time.milliseconds).jpg")
    do {
      try FileManager.default.createDirectory(at: snapshots, withIntermediateDirectories: true)
      try frame.jpegData().write(to: file, options: .atomic)
      done("{\"event\":\"snapshot\",\"code\":0,\"file\":\(PlayCommand.jsonString(file.path))}")
    } catch {
      let code = TiError(error).code == .ok ? TiErrorCode.fileWriteFailed : TiError(error).code
      done("{\"event\":\"snapshot\",\"code\":\(code.rawValue),\"file\":null}")
    }
  }
}

/// `tipipe play --input FILE --window`: parses the flags, opens the window (and the speaker), plays.
enum FilePlayCommand {
  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--input": .value, "--start": .value, "--speed": .value, "--window": .boolean, "--window-size": .value,
        "--no-audio": .boolean, "--cache": .value,
      ])
    let input = try flags.required("--input")
    guard let size = try PlayCommand.windowSize(flags) else {
      throw UsageError(message: "--input plays in a window: add --window")
    }
    let start = try flags.string("--start").map { try FileExportCommand.offset("--start", $0) }
    let speed = try PlayCommand.speed(flags)
    let snapshots = try FacadeSession.cacheDirectory(flags)
    // A file that cannot be read is its error line before any window opens; so is a start past its end
    // (as for export --input), when its headers say how long it is.
    let headers = try MediaFileSource.check(path: input)
    if let start, let length = headers.duration, start >= length {
      throw UsageError(message: "--start is at or after the end of the file (\(length))")
    }
    // A track in a codec that is not read is said, as record and export say it, not left out silently.
    for (kind, codec) in headers.unread where !(kind == .audio && flags.has("--no-audio")) {
      let word = kind == .video ? "picture" : "sound"
      StandardError.write(
        Data("warning: \(input.oneLine): its \(word) (\(codec.oneLine)) is not read: the play has none of it\n".utf8))
    }
    let screen: SDLWindow
    let speaker: SDLAudioDevice?
    do {
      screen = try SDLWindow(title: "tipipe play", width: size.width, height: size.height)
      speaker = flags.has("--no-audio") ? nil : try SDLAudioDevice()
    } catch {
      throw UsageError(message: "--window: \(error)")
    }
    FacadeSession.runOffMain {
      defer {
        speaker?.close()
        screen.close()
      }
      let play = try FilePlay(
        path: input, hasVideo: headers.video != nil, turn: headers.video?.turn,
        start: start.map { MediaTime(microseconds: $0.microseconds) },
        speed: speed, screen: screen, speaker: speaker, snapshots: snapshots)
      let keys = WindowKeys(play: play, screen: screen, showsDates: false)
      keys.start()
      play.onTime.withLock { $0 = { ms in keys.timeChanged(ms) } }
      // The bar's width is the file's length: its packets' headers are read beside the play (not for a
      // raw video stream, whose reading decodes it: it would compete with the play for the cores).
      if !["h264", "hevc"].contains(headers.container) {
        DispatchQueue.global().async {
          guard let info = try? MediaFileSource.probe(path: input) else { return }
          let length = info.duration.milliseconds
          DispatchQueue.main.async { keys.setRange(fromMs: 0, toMs: length) }
        }
      }
      // SIGINT, SIGTERM and SIGHUP end the play as `tipipe play` does: its error line, the summary, exit 1.
      Interruption.shared.onSignal { signal in play.interrupt(by: signal) }
      defer { Interruption.shared.removeHandler() }
      defer { screen.onCommand = nil }
      return try play.run()
    }
  }
}
