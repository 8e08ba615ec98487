import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage
import TiCloudStorageTesting

extension SDKRules {
  /// `TiCloudStorageTestSession` as an application's tests use it: the public API only (no `@testable`).
  @Suite @MainActor struct TestSession {
    /// One play of a synthetic library with a hole, in a session of its own, its callbacks on `thread`:
    /// every callback in order.
    private func playOnce(
      _ library: URL, start: Int64, callbacks thread: TiCloudStorageCallbackThread
    ) async throws -> [String] {
      let cache = try TemporaryDirectory("tipipe-test-session")
      let session = try TiCloudStorageTestSession(library: library, cacheDirectory: cache.url)
      #expect(session.initializeCode == TiCloudStorageErrorCode.ok)
      // The SDK is one per process: so is a session.
      #expect(throws: TiCloudStorageTestSession.Failure.anotherSessionIsLive) {
        try TiCloudStorageTestSession(library: library, cacheDirectory: cache.url)
      }
      let device = TiCloudStorage(token: "any token")
      // A query reads the library on the session's executor: awaited through the session.
      let listed = try await session.awaiting {
        await device.listRecordings(startTimeMs: start, endTimeMs: start + 6000)
      }
      #expect(listed.code == TiCloudStorageErrorCode.ok)
      #expect(listed.recordings.map { [$0.startTimeMs - start, $0.endTimeMs - start] } == [[0, 2000], [3000, 6000]])
      // So is an export: the file holds the recording around the hole (ffprobe judges it).
      let request = TiCloudStorageExportRequest(startTimeMs: start, endTimeMs: start + 6000, videoChannelId: 0)
      let exported = try await session.awaiting { await device.exportRecording(request) }
      #expect(exported.code == TiCloudStorageErrorCode.ok, "\(exported.message ?? "")")
      let file = try #require(exported.file)
      #expect(exported.report?.coveredDurationMs == 5000 && exported.report?.complete == false)
      let probed = try probeRecording(file.path)
      #expect(probed.codecs == ["h264"] && abs(probed.duration - 5.0) < 0.05, "\(probed)")
      let replay = device.createReplay(callbackThread: thread)
      let output = TiCloudStorageVideoOutput()
      let events = Locked<[String]>([])
      replay.onTimeChanged = { ms in events.withLock { $0.append("time \(ms - start)") } }
      replay.onRecordingGap = { gap in
        events.withLock { $0.append("gap \(gap.range.startTimeMs - start)…\(gap.range.endTimeMs - start)") }
      }
      replay.onCompleted = { events.withLock { $0.append("completed") } }
      replay.onError = { code in events.withLock { $0.append("error \(code)") } }
      #expect(output.attachView(NullRenderer()) == TiCloudStorageErrorCode.ok)
      #expect(output.attach(replay: replay, channelId: 0) == TiCloudStorageErrorCode.ok)
      #expect(replay.play(startTimeMs: start, endTimeMs: start + 6000) == TiCloudStorageErrorCode.ok)
      // Nothing happens until the session runs: the clock is the test's.
      #expect(replay.currentTimeMs == nil)
      await session.run(for: .milliseconds(1500))
      let halfway = try #require(replay.currentTimeMs) - start
      #expect((1300...1500).contains(halfway), "\(halfway)")
      #expect(!events.withLock { $0 }.contains("completed"))
      await session.run(for: .seconds(6))
      // The session stays live while an object the test made is.
      #expect(session.finish() == TiCloudStorageErrorCode.inUse)
      for code in [
        replay.stop(), output.detach(), output.detachView(), output.dispose(), replay.dispose(), device.dispose(),
      ] {
        #expect(code == TiCloudStorageErrorCode.ok)
      }
      #expect(session.finish() == TiCloudStorageErrorCode.ok)
      return events.withLock { $0 }
    }

    @Test func aReplayMovesOnlyWithTheSessionAndTheSameWayEveryRun() async throws {
      let library = try TemporaryDirectory("tipipe-test-session-library")
      var options = LibrarySynthesizer.Options()
      options.durationSeconds = 6
      options.gaps = [(offset: 2, length: 1)]
      options.seed = 7
      let summary = try LibrarySynthesizer(options: options).write(to: library.url)
      let start = try #require(summary.index.segments.first?.startMs)
      let first = try await playOnce(library.url, start: start, callbacks: .main)
      // The hole is reported once, the position never goes back, the play completes at the end.
      #expect(first.filter { $0.hasPrefix("gap") } == ["gap 2000…3000"], "\(first)")
      let times = first.compactMap { $0.hasPrefix("time ") ? Int64($0.dropFirst(5)) : nil }
      #expect(times.first == 0 && times == times.sorted() && times.last == 6000, "\(times)")
      #expect(first.last == "completed" && !first.contains { $0.hasPrefix("error") }, "\(first)")
      // A second session plays it again, its callbacks on the background queue: the same callbacks, in
      // the same order, all delivered when `run(for:)` returned.
      #expect(try await playOnce(library.url, start: start, callbacks: .background) == first)
    }
  }
}
