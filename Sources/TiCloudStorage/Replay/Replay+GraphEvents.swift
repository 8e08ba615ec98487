import Foundation
import Nodes
import PipelineGraph

/// What the graph tells a Replay, on its executor: each event goes through the rules
/// (``ReplayStateMachine``) in the Replay's `Replay/Control` (on the executor: no lock), and what they
/// answer is performed after it — outputs told, callbacks delivered.
extension Replay {
  /// Notes a presented frame; false when it belongs to a replaced graph or a removed output.
  func presented(
    _ frame: DecodedFrame, by id: OutputID, video: Bool, candidates: [OutputID], generation: Int
  ) -> (accepted: Bool, steersClock: Bool) {
    typealias Told = (
      first: (@Sendable (OutputEvent) -> Void)?, mismatched: [@Sendable (OutputEvent) -> Void],
      gaps: (@Sendable (RecordingGap) -> Void, [RecordingGap])?, report: (@Sendable (MediaTime) -> Void, MediaTime)?,
      play: Int
    )
    let (verdict, told) = perform { state -> (ReplayStateMachine.FrameVerdict, Told) in
      let handlers = state.handlers.current
      let verdict = state.rules.presented(
        frame.time, by: id, video: video, candidates: candidates, generation: generation,
        listening: handlers.onTimeChanged != nil)
      if verdict.movesPosition {
        if video { state.lastFrame = frame }
        for entry in state.recorders { entry.recorder.advance(to: frame.time) }
      }
      let gaps = handlers.onRecordingGap.flatMap { handler in
        verdict.gaps.isEmpty ? nil : (handler, state.affected(verdict.gaps))
      }
      let report = handlers.onTimeChanged.flatMap { handler in verdict.report.map { (handler, $0) } }
      return (
        verdict,
        (
          verdict.firstFrame ? state.events(of: id) : nil, verdict.mismatched.compactMap { state.events(of: $0) },
          gaps, report, state.rules.playNumber
        )
      )
    }
    told.first?(.presenting)
    if let (handler, gaps) = told.gaps { deliver(play: told.play) { for gap in gaps { handler(gap) } } }
    if let (handler, position) = told.report { deliver(play: told.play) { handler(position) } }
    for events in told.mismatched { events(.failed(Self.channelMismatch)) }
    return (verdict.accepted, verdict.steersClock)
  }

  /// O40's error.
  static let channelMismatch = TiError(
    .channelMismatch, "no media of the output's channel for 5 s of playback while its kind had some")

  /// A bound channel carries nothing (O40): its output fails once the position reaches `time`.
  func channelMissing(_ track: TrackID, noticedAt time: MediaTime, generation: Int) {
    perform { $0.rules.channelMissing(track, noticedAt: time, generation: generation) }
  }

  func drained(_ id: OutputID, generation: Int) {
    perform { $0.rules.drained(id, generation: generation) }
  }

  func outputFailed(_ id: OutputID, _ error: TiError, generation: Int) {
    let events = perform { state in
      state.rules.outputFailed(id, generation: generation) ? state.events(of: id) : nil
    }
    events?(.failed(error))
  }

  func crossed(_ gap: RecordingGap, by id: OutputID, candidates: [OutputID], generation: Int) {
    let report = perform { state -> (@Sendable (RecordingGap) -> Void, [RecordingGap], Int)? in
      let gaps = state.rules.crossed(gap, by: id, candidates: candidates, generation: generation)
      guard !gaps.isEmpty, let handler = state.handlers.current.onRecordingGap else { return nil }
      return (handler, state.affected(gaps), state.rules.playNumber)
    }
    if let (handler, gaps, play) = report { deliver(play: play) { for gap in gaps { handler(gap) } } }
  }

  func completed(generation: Int, candidates: [OutputID]) {
    var ended: [RecorderEntry] = []
    var waiter: Waiter?
    var graph: Graph?
    let (completion, handlers) = perform { state in
      let handlers = state.handlers.current
      let completion = state.rules.completed(generation: generation, candidates: candidates)
      switch completion {
      case .ignored: break
      case .failed, .completed:
        ended = state.takeRecorders()
        waiter = state.waiters.removeValue(forKey: state.rules.playNumber)
        if case .failed = completion { graph = state.graph }
      }
      let early: [RecordingGap]
      switch completion {
      case .ignored: early = []
      case .failed(_, let gaps): early = gaps
      case .completed(let done): early = done.earlyGaps
      }
      return (
        completion,
        (
          gap: handlers.onRecordingGap, early: state.affected(early), time: handlers.onTimeChanged,
          done: handlers.onCompleted,
          error: handlers.onError,
          play: state.rules.playNumber, events: state.attachments.compactMapValues(\.events)
        )
      )
    }
    let play = handlers.play
    switch completion {
    case .ignored: return
    case .failed(let error, _):
      let early = handlers.early
      if let handler = handlers.gap, !early.isEmpty { deliver(play: play) { for gap in early { handler(gap) } } }
      endRecorders(ended)
      graph?.pipeline.stop()
      if let handler = handlers.error { deliver(play: play) { handler(error) } }
      if let waiter { environment.deliver { waiter.end(.failure(error)) } }
    case .completed(let done):
      let early = handlers.early
      if let handler = handlers.gap, !early.isEmpty { deliver(play: play) { for gap in early { handler(gap) } } }
      for events in done.mismatched.compactMap({ handlers.events[$0] }) { events(.failed(Self.channelMismatch)) }
      for events in done.completedOutputs.compactMap({ handlers.events[$0] }) { events(.completed) }
      endRecorders(ended, naturally: true)
      let time = done.reportsEnd ? handlers.time : nil
      let finished = handlers.done
      deliver(play: play) {
        time?(done.end)
        finished?()
      }
      // Delivered after the callbacks, whether or not a new play drops them meanwhile.
      if let waiter { environment.deliver { waiter.end(.success(.completed)) } }
    }
  }

  func failed(_ error: TiError, generation: Int) {
    failed(error) { $0.fail(generation: generation) }
  }

  /// Play number `play` failed before it had a graph (R21).
  func failed(_ error: TiError, play: Int) {
    failed(error) { $0.fail(play: play) }
  }

  private func failed(_ error: TiError, when fails: (inout ReplayStateMachine) -> Bool) {
    var ended: [RecorderEntry] = []
    var waiter: Waiter?
    let told = perform { state -> (ErrorHandler?, Int, Graph?)? in
      guard fails(&state.rules) else { return nil }
      ended = state.takeRecorders()
      waiter = state.waiters.removeValue(forKey: state.rules.playNumber)
      return (state.handlers.current.onError, state.rules.playNumber, state.graph)
    }
    endRecorders(ended)
    guard let (handler, play, graph) = told else { return }
    graph?.pipeline.stop()
    if let handler { deliver(play: play) { handler(error) } }
    if let waiter { environment.deliver { waiter.end(.failure(error)) } }
  }

  /// Delivers a play's callback, unless a stop or a new play came before it ran (R70).
  func deliver(play: Int, _ body: @escaping @Sendable () -> Void) {
    environment.deliver { [weak self] in
      guard let self, playNumber.load(ordering: .acquiring) == play else { return }
      body()
    }
  }
}

extension Replay.Control {
  /// `gaps` as reported: each lists every followed track the hole affects, not only the track whose
  /// output crossed it (R71: a hole of the recording is a gap of the picture and of the sound).
  func affected(_ gaps: [RecordingGap]) -> [RecordingGap] {
    guard let detector = graph?.joints.detector else { return gaps }
    return gaps.map { gap in
      var gap = gap
      gap.tracks = detector.affectedTracks(of: gap)
      return gap
    }
  }
}
