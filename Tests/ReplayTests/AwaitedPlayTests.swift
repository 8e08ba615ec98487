import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// `try await replay.play(…)`: returns at the play's end, after its callbacks; throws its failure;
/// cancellation and stops end it.
@Suite struct AwaitedPlayTests {
  /// A replay of `seconds` of the fixture library as fast as the machine allows, its callbacks logged.
  private func freeRunning(seconds: Int, damage: (URL) throws -> Void = { _ in }) throws
    -> (Replay, ReplayLog, TemporaryDirectory)
  {
    let directory = try TemporaryDirectory("tipipe-awaited")
    try LibrarySynthesizer(options: ReplayFixtures.options(seconds: seconds)).write(to: directory.url)
    try damage(directory.url)
    let replay = Replay(
      service: LocalLibraryService(directory: directory.url),
      environment: .freeRunning(callbacks: DispatchQueue(label: "test.awaited")))
    replay.bindVideo(channel: 0, renderer: NullRenderer())
    let log = ReplayLog()
    log.observe(replay)
    return (replay, log, directory)
  }

  @Test func anAwaitedPlayReturnsCompletedAfterOnCompleted() async throws {
    let (replay, log, library) = try freeRunning(seconds: 6)
    defer { withExtendedLifetime(library) {} }
    let ending = try await replay.play(
      MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "test")
    #expect(ending == .completed)
    // The callbacks came first, in order, and the play is over.
    #expect(log.completions == 1)
    #expect(log.entries.last == .completed)
    #expect(log.times.last == recordingStart + 6000)
    #expect(!replay.isActive)
    #expect(replay.statistics.videoFrames == 150)
  }

  @Test func aFailedPlayThrowsItsError() async throws {
    let (replay, log, library) = try freeRunning(seconds: 6) { library in
      let index = try RecordingIndex.load(library: library)
      let last = index.segments.sorted { $0.startMs < $1.startMs }.last!
      try FileManager.default.removeItem(at: last.fileURL(in: library))
    }
    defer { withExtendedLifetime(library) {} }
    await #expect(throws: TiError.self) {
      try await replay.play(
        MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "test")
    }
    do {
      _ = try await replay.play(
        MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000), token: "test")
      Issue.record("the play should have failed")
    } catch let error as TiError {
      #expect(error.code == .recordingNotFound)
    }
    #expect(log.errors == [.recordingNotFound, .recordingNotFound])
  }

  @Test func aRefusedPlayThrowsAtOnce() async throws {
    let (replay, log, library) = try freeRunning(seconds: 3)
    defer { withExtendedLifetime(library) {} }
    do {
      _ = try await replay.play(
        MediaRange(startMilliseconds: recordingStart + 10, endMilliseconds: recordingStart), token: "test")
      Issue.record("an empty range should be refused")
    } catch let error as TiError {
      #expect(error.code == .invalidArgument)
    }
    let unbound = Replay(service: LocalLibraryService(directory: URL(fileURLWithPath: "/nonexistent")))
    do {
      _ = try await unbound.play(MediaRange(startMilliseconds: 0, endMilliseconds: 1), token: "test")
      Issue.record("a replay without outputs should refuse")
    } catch let error as TiError {
      #expect(error.code == .notBound)
    }
    #expect(log.entries.isEmpty)
  }

  @Test func stopAnotherPlayAndCancellationEndTheAwaitAsStopped() async throws {
    let harness = try ReplayHarness(seconds: 9)
    let (replay, start) = (harness.replay, harness.recordingStart)
    // stop()
    let stopped = Task {
      try await replay.play(MediaRange(startMilliseconds: start, endMilliseconds: start + 9000), token: "test")
    }
    try await yieldUntil("the awaited play to start") { replay.isActive }
    harness.run(for: .milliseconds(500))
    replay.stop()
    harness.executor.runUntilIdle()
    #expect(try await stopped.value == .stopped)
    // Another play (started here, on the test's thread, so that nothing races).
    let replaced = Task {
      try await replay.play(MediaRange(startMilliseconds: start, endMilliseconds: start + 9000), token: "test")
    }
    try await yieldUntil("the awaited play to start") { replay.isActive }
    harness.run(for: .milliseconds(500))
    #expect(harness.play(3000, 6000) == .ok)
    harness.runToEnd()
    #expect(try await replaced.value == .stopped)
    #expect(harness.log.completions == 1)
    // The awaiting task's cancellation stops the play.
    let cancelled = Task {
      try await replay.play(MediaRange(startMilliseconds: start, endMilliseconds: start + 9000), token: "test")
    }
    try await yieldUntil("the awaited play to start") { replay.isActive }
    harness.run(for: .milliseconds(500))
    cancelled.cancel()
    try await yieldUntil("the cancelled play to stop") { !replay.isActive }
    harness.executor.runUntilIdle()
    #expect(try await cancelled.value == .stopped)
    #expect(harness.log.completions == 1)
  }
}
