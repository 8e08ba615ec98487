import Foundation
import Nodes
import PipelineGraph

/// A Replay's outputs, recorders and raw dumps: what it presents to and who else takes what it reads.
extension Replay {
  // MARK: Outputs

  /// Presents the video of `channel` to `renderer`; `events` hears of the branch's first frame, its end
  /// and its own failure, on the environment's executor (not through `deliver`). Bound while a play
  /// runs, the output's branch joins the running graph (nothing is read again; the first video output of
  /// a play of audio alone drives the position from its first frame on, the sound following it) and
  /// starts at the next keyframe (audio: at the position; while paused: at once with the position's
  /// frame).
  @discardableResult
  package func bindVideo(
    channel: UInt8, renderer: any VideoRenderer, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    bind(channel: channel, target: .video(renderer), volume: 100, events: events)
  }

  /// Plays the audio of `channel` on `device` at `volume` (0...100); see ``bindVideo(channel:renderer:events:)``.
  @discardableResult
  package func bindAudio(
    channel: UInt8, device: any AudioDevice, volume: Int = 100, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    bind(channel: channel, target: .audio(device), volume: min(max(volume, 0), 100), events: events)
  }

  /// Binds an output of `channel` presenting to `target`; see ``bindVideo(channel:renderer:events:)``.
  @discardableResult
  package func bind(
    channel: UInt8, target: OutputTarget, volume: Int = 100, events: (@Sendable (OutputEvent) -> Void)? = nil
  ) -> OutputID {
    let track: TrackID
    switch target {
    case .video: track = TrackID(.video, channel: channel)
    case .audio: track = TrackID(.audio, channel: channel)
    }
    let (id, restart) = perform { state -> (OutputID, Bool) in
      let (id, active) = state.rules.bind(track)
      state.attachments[id] = Attachment(target: target, volume: volume, events: events)
      // The running graph takes the output's branch in; it is rebuilt when it cannot (see `join`).
      guard active, let output = state.rules.outputs.last, output.id == id else { return (id, active) }
      return (id, !join(output, &state))
    }
    if restart { self.restart() }
    return id
  }

  /// Removes an output. The play goes on for the others (its branch leaves the running graph; an output
  /// that drove the position hands its place to another output of its track that presents — or, a
  /// picture, to one that waits for its first keyframe, shown from the position at once —, the sound
  /// beside a picture that drives goes to the first audio output left or leaves with the last, the last
  /// picture hands the play to the sound beside it — played yet or not —, and only otherwise is the graph
  /// rebuilt); when none is left the replay stops reading
  /// (no completion, the position frozen) until an output is bound again.
  package func unbind(_ id: OutputID) {
    // The output's renderer or device is let go here, after the command: its deinit (a window that
    // closes) must not run on the executor inside it.
    let (restart, released) = perform { state -> (Bool, Attachment?) in
      let released = state.attachments.removeValue(forKey: id)
      let track = state.rules.outputs.first { $0.id == id }?.track
      guard state.rules.unbind(id), let track else { return (false, released) }
      return (!cut(id, track: track, &state), released)
    }
    withExtendedLifetime(released) {}
    if restart { self.restart() }
  }

  /// Sets an audio output's volume, 0...100; `invalidArgument` outside (nothing changes).
  @discardableResult
  package func setVolume(_ volume: Int, of id: OutputID) -> TiErrorCode {
    guard (0...100).contains(volume) else { return .invalidArgument }
    perform { state in state.attachments[id]?.volume = volume }
    return .ok
  }

  // MARK: Recording

  /// Hands what the active play plays from now on to `recorder` (which starts at its next keyframe),
  /// even while no output is bound. The running graph's tap hands it what it kept from the position on
  /// (``RecorderTap/join(_:generation:)``), so nothing is read again; the graph is rebuilt from the
  /// position when the tap let some of that go, the router did not let a track of the recorder through
  /// whole from its start on (``TrackRouter/passesAll(_:from:generation:)``), it records audio and no
  /// transcoder feeds the tap, or no output
  /// presents (a tap that is not paced would write what it kept at once). `onEnd` is called once when the play ends (with true for a natural completion),
  /// the recorder falls behind (`ReplayRecorder.whenOverrun(_:)`) or ``removeRecorder(_:)`` is called,
  /// directly rather than through `deliver`: on the environment's executor when the graph completes or
  /// fails, on a global queue when the recorder fell behind, else on the thread of the call that ended
  /// the play. `notStarted` without an active play.
  @discardableResult
  package func addRecorder(_ recorder: ReplayRecorder, onEnd: @escaping @Sendable (Bool) -> Void) -> TiErrorCode {
    // The running graph's tap takes it in when it kept what the recorder starts with; else the graph is
    // built again from the position.
    let joined = perform { state -> Bool? in
      guard state.rules.active else { return nil }
      state.recorders.append((recorder, onEnd))
      return join(recorder, state)
    }
    guard let joined else { return .notStarted }
    // A writer that cannot keep up ends its task at once (T13), not when the play ends.
    recorder.whenOverrun { [weak self, weak recorder] in
      if let self, let recorder { removeRecorder(recorder) }
    }
    if !joined { restart() }
    return .ok
  }

  /// Where the active play is (ms), or where it starts when nothing was presented yet.
  package var recordingStart: MediaTime? {
    let facts = facts.value
    guard let anchor = facts.recordingAnchor else { return nil }
    return facts.followsPosition ? currentTime ?? anchor : anchor
  }

  /// Stops handing media to `recorder` (its task stopped) and calls its `onEnd`; with no output and no
  /// other recorder left the replay stops reading.
  package func removeRecorder(_ recorder: ReplayRecorder) {
    let (ended, idle) = perform { state -> ((@Sendable (Bool) -> Void)?, Bool) in
      guard let index = state.recorders.firstIndex(where: { $0.recorder === recorder }) else { return (nil, false) }
      let ended = state.recorders.remove(at: index).onEnd
      return (ended, state.rules.active && state.rules.outputs.isEmpty && state.recorders.isEmpty)
    }
    if idle { restart() }
    ended?(false)
  }

  // MARK: Raw dumps

  /// Hands every packet of `dump`'s tracks that the replay reads from now on — across plays, seeks and
  /// binding changes — to `dump`, which finishes by itself after `maximumDuration` on the replay's
  /// clock (`durationLimit`). Nothing is captured while nothing is read.
  package func attachRawDump(_ dump: RawDumpWriter, maximumDuration: Duration) {
    let clock = environment.clock
    let timer = clock.schedule(at: clock.now + maximumDuration, on: environment.executor) { [weak dump] in
      dump?.finish(.durationLimit) { _ in }
    }
    perform { $0.rawDumps.append((dump, timer)) }
    dump.whenFinished { [weak self, weak dump] _ in
      guard let self, let dump else { return }
      detachRawDump(dump)
    }
  }

  /// Stops handing media to `dump`.
  func detachRawDump(_ dump: RawDumpWriter) {
    let timer = perform { state -> ClockTimer? in
      guard let index = state.rawDumps.firstIndex(where: { $0.dump === dump }) else { return nil }
      return state.rawDumps.remove(at: index).timer
    }
    timer?.cancel()
  }
}
