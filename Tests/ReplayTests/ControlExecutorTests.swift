import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Synchronization
import Testing
import TiCloudStorage

/// A Replay's one concurrency model (issue 25): its state lives on its control executor; a command from
/// that executor's own thread runs inline, one from any other thread waits for the executor, and the
/// getters read what it published without waiting for it.
@Suite struct ControlExecutorTests {
  /// A free-running replay (its own executor thread) of `seconds` of the small fixture library.
  private func replay(seconds: Int) throws -> (Replay, TemporaryDirectory, any PipelineExecutor) {
    let library = try TemporaryDirectory("tipipe-control")
    try LibrarySynthesizer(options: smallOptions(seconds: seconds)).write(to: library.url)
    let environment = ReplayEnvironment.freeRunning(callbacks: DispatchQueue(label: "test.control.callbacks"))
    let replay = Replay(service: LocalLibraryService(directory: library.url), environment: environment)
    return (replay, library, environment.executor)
  }

  /// An output's event runs on the executor: a command made there runs inline (queued behind the job
  /// that makes it, it would wait for itself for ever).
  @Test func aCommandFromTheExecutorsOwnThreadRunsInline() throws {
    let (replay, library, _) = try replay(seconds: 6)
    defer { withExtendedLifetime(library) {} }
    let answered = DispatchSemaphore(value: 0)
    let answers = Mutex<[TiErrorCode]>([])
    replay.bindVideo(channel: 0, renderer: NullRenderer()) { [weak replay] event in
      guard case .presenting = event, let replay else { return }
      answers.withLock { $0.append(replay.pause()) }
      answered.signal()
    }
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "t")
        == .ok)
    try answered.wait(for: "the pause made from the output's first-frame event")
    #expect(answers.withLock { $0 } == [.ok])
    #expect(replay.isPaused)
    #expect(replay.stop() == .ok)
  }

  /// The getters answer while the executor is busy (a job that does not end until the test says so):
  /// they read what it published, and the commands made meanwhile wait for it.
  @Test func gettersDoNotWaitForTheExecutor() throws {
    let (replay, library, executor) = try replay(seconds: 6)
    defer { withExtendedLifetime(library) {} }
    // Paused at its first picture, from the output's event (a pause from here, after play returns, could
    // come after a free-running play's end on a busy machine).
    let paused = DispatchSemaphore(value: 0)
    let pauses = Mutex<[TiErrorCode]>([])
    replay.bindVideo(channel: 0, renderer: NullRenderer()) { [weak replay] event in
      guard case .presenting = event, let replay, pauses.withLock({ $0.isEmpty }) else { return }
      pauses.withLock { $0.append(replay.pause()) }
      paused.signal()
    }
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "t")
        == .ok)
    try paused.wait(for: "the pause made from the output's first-frame event")
    #expect(pauses.withLock { $0 } == [.ok])
    #expect(replay.activeGraph != nil)
    // Block the executor: a seek's command is queued behind the blocking job.
    let blocked = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    executor.execute {
      blocked.signal()
      _ = release.wait(timeout: .now() + 300)
    }
    try blocked.wait(for: "the executor to be blocked")
    let read = DispatchSemaphore(value: 0)
    let seen = Mutex<(Bool, Bool, ReplaySpeed)?>(nil)
    DispatchQueue.global().async {
      seen.withLock { $0 = (replay.isActive, replay.isPaused, replay.speed) }
      _ = replay.currentTime?.milliseconds
      _ = replay.statistics
      read.signal()
    }
    try read.wait(for: "the getters, read while the executor is blocked")
    #expect(seen.withLock { $0 }! == (true, true, .x1))
    let seeked = DispatchSemaphore(value: 0)
    let code = Mutex<TiErrorCode?>(nil)
    DispatchQueue.global().async {
      code.withLock { $0 = replay.seek(to: MediaTime(milliseconds: recordingStart + 3000)) }
      seeked.signal()
    }
    // The seek waits for the executor: it has not answered while the executor is blocked.
    #expect(seeked.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
    release.signal()
    try seeked.wait(for: "the seek, once the executor is free")
    #expect(code.withLock { $0 } == .ok)
    #expect(replay.stop() == .ok)
    #expect(!replay.isActive)
    #expect(replay.currentTime?.milliseconds == nil)
  }

  /// Commands from several threads at once are run one at a time on the executor, and the getters
  /// agree with the last of them (the thread sanitizer watches the rest).
  @Test func commandsFromManyThreadsAreRunOneAtATime() throws {
    let (replay, library, _) = try replay(seconds: 6)
    defer { withExtendedLifetime(library) {} }
    replay.bindVideo(channel: 0, renderer: NullRenderer())
    replay.bindAudio(channel: 1, device: NullAudioDevice())
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "t")
        == .ok)
    let speeds: [ReplaySpeed] = [.x0_5, .x1, .x2, .x4]
    let refused = Atomic(0)
    DispatchQueue.concurrentPerform(iterations: 8) { thread in
      for step in 0..<25 {
        let codes: [TiErrorCode] = [
          replay.setSpeed(speeds[(thread + step) % speeds.count]),
          replay.seek(to: MediaTime(milliseconds: recordingStart + Int64((thread * 25 + step) % 60) * 100)),
          step % 2 == 0 ? replay.pause() : replay.resume(),
        ]
        // A play may complete meanwhile (free-running): a seek or a pause of it is then notStarted.
        refused.add(codes.count { $0 != .ok && $0 != .notStarted }, ordering: .relaxed)
        _ = (replay.currentTime?.milliseconds, replay.isActive, replay.statistics)
      }
    }
    #expect(refused.load(ordering: .relaxed) == 0)
    #expect(replay.setSpeed(.x8) == .ok)
    #expect(replay.speed == .x8)
    #expect(replay.stop() == .ok)
    #expect(!replay.isActive && !replay.isPaused)
    #expect(replay.currentTime?.milliseconds == nil)
  }

  /// Outputs bound and unbound from several threads while a play runs on its own thread: each branch
  /// joins and leaves the running graph; the first output goes on undisturbed and the play completes.
  @Test func outputsJoinAndLeaveFromManyThreadsWhileThePlayRuns() throws {
    let (replay, library, _) = try replay(seconds: 6)
    defer { withExtendedLifetime(library) {} }
    let first = TimedRenderer(clock: MonotonicClock())
    let failures = Atomic(0)
    replay.bindVideo(channel: 0, renderer: first) { event in
      if case .failed = event { failures.add(1, ordering: .relaxed) }
    }
    replay.bindAudio(channel: 1, device: NullAudioDevice())
    let graph = Mutex<Pipeline?>(nil)
    let completed = DispatchSemaphore(value: 0)
    replay.onCompleted = { completed.signal() }
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "t")
        == .ok)
    graph.withLock { $0 = replay.activeGraph }
    let rebuilt = Atomic(0)
    let whilePlaying = Atomic(0)
    DispatchQueue.concurrentPerform(iterations: 4) { thread in
      for _ in 0..<20 {
        let id =
          thread % 2 == 0
          ? replay.bindVideo(channel: 0, renderer: NullRenderer()) { event in
            if case .failed = event { failures.add(1, ordering: .relaxed) }
          }
          : replay.bindAudio(channel: 1, device: NullAudioDevice())
        if let now = replay.activeGraph {
          whilePlaying.add(1, ordering: .relaxed)
          if now !== graph.withLock({ $0 }) { rebuilt.add(1, ordering: .relaxed) }
        }
        replay.unbind(id)
      }
    }
    try completed.wait(for: "the play's completion")
    #expect(rebuilt.load(ordering: .relaxed) == 0)
    // The binds came while it played (a free-running play of 6 s takes far longer than the first one).
    #expect(whilePlaying.load(ordering: .relaxed) > 0)
    #expect(failures.load(ordering: .relaxed) == 0)
    let frames = first.frames
    #expect(frames.count == 150)
    #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.media < $1.media })
  }
}
