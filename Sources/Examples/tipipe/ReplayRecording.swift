import Dispatch
import Foundation
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage
import TrackRecording

/// `tipipe record --endpoint …` (`spec/cli.md`): what a Replay presents, recorded as it plays. The
/// Replay's Video and Audio Outputs draw into tracks (``MediaTrack`` is a renderer and an audio device)
/// and TrackRecorders take the tracks, as an app records the play on its screen (seed 003 over seed 000).
enum ReplayRecording {
  /// Records when the arguments are the endpoint form (`--endpoint` given as a flag, without a listing or
  /// a deletion); returns otherwise. Once it records it never returns: the facade's main queue runs on
  /// the main thread until the process exits — which is why the arguments are parsed in a closure of
  /// their own (nothing of the parser stays in this frame, which LeakSanitizer would report).
  static func runIfAsked(_ arguments: [String]) throws {
    let parsed = try { () throws -> (play: Play, endpoint: String, token: String, cache: URL)? in
      let flags = try FlagParser(arguments, known: RecordCommand.flags)
      guard let endpoint = flags.string("--endpoint"), !flags.has("--list"), flags.string("--delete") == nil,
        !flags.has("--delete-all")
      else { return nil }
      guard flags.all("--input").isEmpty else { throw UsageError(message: "--endpoint and --input exclude each other") }
      try RecordCommand.setDataRoot(flags)
      let options = try RecordCommand.Options(flags)
      let token = try Endpoint(flags).token
      guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
      guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
      guard start < end else { throw UsageError(message: "--start must be before --end") }
      guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
      let videoChannel = UInt8(try flags.integer("--video-channel", default: 0, range: 0...255))
      let audioChannel =
        flags.string("--audio-channel") == nil
        ? nil : UInt8(try flags.integer("--audio-channel", default: 0, range: 0...255))
      if !options.video && audioChannel == nil {
        throw UsageError(message: "--no-video records the audio channel alone: --audio-channel is required")
      }
      let paceText = flags.string("--pace") ?? "realtime"
      guard ["realtime", "fast"].contains(paceText) else {
        throw UsageError(message: "--pace must be realtime or fast")
      }
      let play = Play(
        start: start, end: end, videoChannel: videoChannel, audioChannel: options.audio ? audioChannel : nil,
        fast: paceText == "fast", options: options)
      return (play, endpoint, token, try FacadeSession.cacheDirectory(flags))
    }()
    guard let parsed else { return }
    let play = parsed.play
    FacadeSession.run(endpoint: parsed.endpoint, token: parsed.token, cache: parsed.cache) { storage in
      try play.record(storage)
    }
  }

  /// One recorded play.
  struct Play: Sendable {
    let start: Int64
    let end: Int64
    let videoChannel: UInt8
    /// The audio channel recorded, if any.
    let audioChannel: UInt8?
    /// `--pace fast`: the play waits for the recorders instead of running on the wall clock.
    let fast: Bool
    let options: RecordCommand.Options

    /// Plays `[start, end)` of `storage` into the recorders; runs off the main thread.
    func record(_ storage: TiCloudStorage) throws -> Int32 {
      let videoTrack = options.video ? MediaTrack(id: TrackID(.video, channel: videoChannel)) : nil
      let audioTrack = audioChannel.map { MediaTrack(id: TrackID(.audio, channel: $0)) }
      // Frame times are the recordings' own (ms since the epoch): the pauses count from --start.
      let cuts = options.cuts(from: MediaTime(milliseconds: start))
      // From here on a signal ends the play (or keeps it from starting): the recorders always finish,
      // and a name never stays taken by an empty file.
      let run = Run()
      Interruption.shared.onSignal { signal in run.interrupt(signal) }
      defer { Interruption.shared.removeHandler() }
      let (recorders, failure) = onMain {
        RecordCommand.startRecorders(
          video: videoTrack, audio: audioTrack, name: options.name, fps: options.fps, size: options.size, cuts: cuts,
          copies: options.copies)
      }
      if let failure {
        waitUntilIdle(recorders)
        return try RecordCommand.fail(failure)
      }
      // The play's holes are closed up in every recording of it (T18), not held as frozen stretches.
      let tracks = Set([videoTrack?.id, audioTrack?.id].compactMap { $0 })
      let closer = HoleCloser(recorded: tracks, from: MediaTime(milliseconds: start)) { hole in
        for recorder in recorders { recorder.leaveOut(hole) }
      }
      let ending: TiError?
      do {
        ending = try play(storage, video: videoTrack, audio: audioTrack, run: run, closer: closer)
      } catch {
        // The play could not start: the recorders end with nothing recorded (their files removed).
        videoTrack?.end()
        audioTrack?.end()
        waitUntilIdle(recorders)
        throw error
      }
      // The play is over: the tracks end, and each recorder completes its file from what they carried.
      videoTrack?.end()
      audioTrack?.end()
      waitUntilIdle(recorders)
      let recorded = onMain { recorders.contains { $0.lastFinishedFile != nil } }
      if let ending, !recorded { throw ending }
      try onMain { try RecordCommand.report(recorders) }
      // A play cut short still reports what it recorded, then why it ended (exit 1).
      if let ending { throw ending }
      return 0
    }

    /// Runs the Replay with its outputs drawing into the tracks until it completes, fails or a signal
    /// stops it; returns why it ended early, if it did.
    private func play(
      _ storage: TiCloudStorage, video videoTrack: MediaTrack?, audio audioTrack: MediaTrack?, run: Run,
      closer: HoleCloser
    ) throws -> TiError? {
      let replay = storage.createReplay(callbackThread: .main, pace: fast ? .asFastAsPossible : .realtime)
      let video = videoTrack.map { _ in TiCloudStorageVideoOutput() }
      let audio = audioTrack.map {
        TiCloudStorageAudioOutput(device: TrackFeeder(track: $0, waits: fast, closer: closer))
      }
      defer {
        // No output thread stays waiting in the closer while the play stops.
        closer.finish()
        _ = replay.stop()
        if let video {
          _ = video.detach()
          _ = video.detachView()
          _ = video.dispose()
        }
        if let audio {
          _ = audio.detach()
          _ = audio.dispose()
        }
        _ = replay.dispose()
      }
      if let video, let videoTrack {
        try FacadeSession.check(
          video.attachView(TrackFeeder(track: videoTrack, waits: fast, closer: closer)), "attachView")
        try FacadeSession.check(video.attach(replay: replay, channelId: videoChannel), "attach video")
      }
      if let audio, let audioChannel {
        try FacadeSession.check(audio.attach(replay: replay, channelId: audioChannel), "attach audio")
      }
      replay.onRecordingGap = { gap in
        closer.reported(
          MediaRange(
            start: MediaTime(milliseconds: gap.range.startTimeMs), end: MediaTime(milliseconds: gap.range.endTimeMs)),
          tracks: Set(gap.tracks.map { TrackID($0.kind == .video ? .video : .audio, channel: $0.channelId) }))
      }
      replay.onCompleted = { run.finish(nil) }
      replay.onError = { code in run.finish(FacadeSession.error(code, "the replay failed")) }
      defer {
        // The callbacks hold the run, whose stop holds the Replay: none is left (a cycle would outlive
        // the command).
        replay.onCompleted = nil
        replay.onError = nil
        replay.onRecordingGap = nil
      }
      guard
        run.started(stoppingWith: {
          closer.finish()
          _ = replay.stop()
        })
      else { return run.ending }
      try FacadeSession.check(replay.play(startTimeMs: start, endTimeMs: end, initialTimeMs: nil), "play")
      run.wait()
      return run.ending

    }
  }

  /// One play's end: completed, failed, or stopped by a signal — whichever comes first.
  final class Run: Sendable {
    private let state = Locked<(ending: TiError?, ended: Bool, stop: (@Sendable () -> Void)?)>((nil, false, nil))
    private let finished = DispatchSemaphore(value: 0)

    /// Why the play ended early, if it did.
    var ending: TiError? { state.withLock { $0.ending } }

    /// The play ended (`error`: why, when it failed).
    func finish(_ error: TiError?) {
      let first = state.withLock { state -> Bool in
        defer {
          state.ended = true
          // The stop holds the Replay, whose callbacks hold this: let it go once the play is over.
          state.stop = nil
        }
        if !state.ended { state.ending = error }
        return !state.ended
      }
      if first { finished.signal() }
    }

    /// A signal: the play is stopped (on the main queue, where the Replay's calls go), or never starts.
    func interrupt(_ signal: Int32) {
      let stop = state.withLock { $0.stop }
      finish(Interruption.cancellation(by: signal))
      if let stop { DispatchQueue.main.async { stop() } }
    }

    /// Notes how to stop the play; false when a signal came first (the play must not start).
    func started(stoppingWith stop: @escaping @Sendable () -> Void) -> Bool {
      state.withLock { state in
        guard !state.ended else { return false }
        state.stop = stop
        return true
      }
    }

    /// Waits for the play's end.
    func wait() { finished.wait() }
  }

  /// Runs `body` on the main actor (the recorders live there) and returns its result.
  private static func onMain<Value: Sendable>(_ body: @MainActor () throws -> Value) rethrows -> Value {
    try DispatchQueue.main.sync { try MainActor.assumeIsolated(body) }
  }

  /// Waits (off the main thread) until every recorder is idle.
  private static func waitUntilIdle(_ recorders: [TrackRecorder]) {
    let idle = DispatchSemaphore(value: 0)
    DispatchQueue.main.async { MainActor.assumeIsolated { RecordCommand.whenIdle(recorders) { idle.signal() } } }
    idle.wait()
  }

  /// Hands what a Replay's output presents to a track, once the play's closer let it (a hole before it
  /// is left out first). In real time the play never waits for the recorder (one that falls behind loses
  /// its oldest frames, as with a live camera); at `--pace fast` nothing is lost: the play waits while a
  /// recorder's queue is full — at most 10 s a frame, so a recorder that stopped taking cannot hold the
  /// play forever.
  final class TrackFeeder: VideoRenderer, AudioDevice, Sendable {
    let track: MediaTrack
    let waits: Bool
    let closer: HoleCloser

    init(track: MediaTrack, waits: Bool, closer: HoleCloser) {
      self.track = track
      self.waits = waits
      self.closer = closer
    }

    func render(_ frame: DecodedFrame) { feed(frame) }

    func play(_ frame: DecodedFrame, volume: Int) { feed(frame) }

    private func feed(_ frame: DecodedFrame) {
      closer.admit(frame)
      guard !track.push(frame), waits else { return }
      let room = DispatchSemaphore(value: 0)
      track.whenRoom { room.signal() }
      _ = room.wait(timeout: .now() + 10)
    }
  }
}
