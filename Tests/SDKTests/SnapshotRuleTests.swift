import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok
private let noFrame = TiCloudStorageErrorCode.noFrame

extension SDKRules {
  /// Rules.md group S (snapshots) and F (the files the SDK returns).
  @Suite @MainActor struct Snapshots {
    @Test func S2_S3_F1_F2_F3_eachSnapshotIsANewJPEGInTheCacheDeliveredOnceOnMain() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(500))
      let first = await rig.video.takeSnapshot()
      var completions: [(Int32, String?, Bool)] = []
      rig.video.takeSnapshot { result in completions.append((result.code, result.file?.path, onMainQueue)) }
      await session.drainMain { !completions.isEmpty }
      #expect(completions.count == 1)
      #expect(completions[0].0 == ok && completions[0].2)
      let paths = [try #require(first.file?.path), try #require(completions[0].1)]
      #expect(Set(paths).count == 2)
      for path in paths {
        #expect(
          URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL
            == session.media.standardizedFileURL)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.prefix(2) == Data([0xFF, 0xD8]))
      }
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func S4_S7_noFrameUntilTheBindingGenerationPresents() async throws {
      let session = try SDKSession()
      let never = TiCloudStorageVideoOutput()
      let result = await never.takeSnapshot()
      #expect(result.code == noFrame && result.file == nil)
      #expect(never.dispose() == ok)
      let rig = ReplayRig()
      #expect(await rig.video.takeSnapshot().code == noFrame)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.video.detachView() == ok)
      #expect(await rig.video.takeSnapshot().code == noFrame)
      await session.run(for: .milliseconds(100))
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.play() == ok)  // a new play
      #expect(await rig.video.takeSnapshot().code == noFrame)
      await session.run(for: .milliseconds(100))
      #expect(rig.video.detach() == ok)
      #expect(await rig.video.takeSnapshot().code == noFrame)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func S5_S6_S8_theLastFrameStaysAfterPauseCompletionStopAndSeek() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(7000, 9000) == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.replay.pause() == ok)
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.replay.seek(toTimeMs: recordingStart + 8000) == ok)
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.replay.resume() == ok)
      await session.run(for: .seconds(5))
      #expect(rig.log.entries.contains(.completed))
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.replay.stop() == ok)
      #expect(await rig.video.takeSnapshot().code == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func S9_S10_S12_oneSnapshotAtATimeAndALimitForAll() async throws {
      // Snapshots are encoded on a queue the test holds: the first one stays pending until it is let go.
      let encoding = DispatchQueue(label: "held snapshots")
      encoding.suspend()
      let session = try SDKSession(maximumSnapshots: 1, snapshotQueue: encoding)
      let rig = ReplayRig()
      let second = ReplayRig(bindAudio: false)
      #expect(rig.play() == ok)
      #expect(second.play() == ok)
      await session.run(for: .milliseconds(300))
      var results: [String: Int32] = [:]
      rig.video.takeSnapshot { results["first"] = $0.code }
      rig.video.takeSnapshot { results["again"] = $0.code }
      second.video.takeSnapshot { results["other"] = $0.code }
      // While it is pending, detach works and the snapshot keeps its frame (S12).
      #expect(rig.video.detach() == ok)
      #expect(rig.video.detachView() == ok)
      encoding.resume()
      await session.drainMain { results.count == 3 }
      #expect(
        results == [
          "first": ok, "again": TiCloudStorageErrorCode.inUse, "other": TiCloudStorageErrorCode.resourceExhausted,
        ])
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(second.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func S11_aPendingSnapshotRefusesDisposeAndShutdownAndChangesNothing() async throws {
      let encoding = DispatchQueue(label: "held snapshot")
      encoding.suspend()
      let session = try SDKSession(snapshotQueue: encoding)
      let rig = ReplayRig()
      let otherReplay = rig.storage.createReplay()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      var first: TiCloudStorageSnapshotResult?
      rig.video.takeSnapshot { first = $0 }
      // Refused, and the Output, its view and its binding are as they were.
      #expect(rig.video.dispose() == TiCloudStorageErrorCode.inUse)
      #expect(rig.video.core.binding?.replay === rig.replay && rig.video.state == .rendering)
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == ok)  // the same binding (O14)
      #expect(rig.video.attach(replay: otherReplay, channelId: 0) == TiCloudStorageErrorCode.inUse)  // O15
      #expect(rig.video.attachView(rig.view) == ok)  // the same view (O34)
      #expect(rig.video.attachView(FrameCaptureRenderer()) == TiCloudStorageErrorCode.inUse)  // O35
      let drawn = rig.view.renderedTimes.count
      await session.run(for: .milliseconds(200))
      #expect(rig.view.renderedTimes.count > drawn)  // still drawing into its view
      // Everything else released: the pending snapshot alone still refuses dispose and shutdown.
      #expect(rig.replay.stop() == ok)
      #expect(rig.audio.detach() == ok && rig.audio.dispose() == ok)
      #expect(rig.video.detach() == ok && rig.video.detachView() == ok)  // allowed while pending (S12)
      #expect(rig.replay.dispose() == ok && otherReplay.dispose() == ok && rig.storage.dispose() == ok)
      #expect(rig.video.dispose() == TiCloudStorageErrorCode.inUse)
      #expect(TiCloudStorage.shutdown() == TiCloudStorageErrorCode.inUse)
      encoding.resume()
      await session.drainMain { first != nil }
      #expect(first?.code == ok && first?.file != nil)
      #expect(rig.video.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func S13_aJPEGThatCannotBeWrittenIsFileWriteFailed() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      try FileManager.default.removeItem(at: session.media)
      #expect(FileManager.default.createFile(atPath: session.media.path, contents: Data("not a folder".utf8)))
      let result = await rig.video.takeSnapshot()
      #expect(result.code == TiCloudStorageErrorCode.fileWriteFailed)
      #expect(result.file == nil)
      #expect(try Data(contentsOf: session.media) == Data("not a folder".utf8))
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func S14_theJPEGHasTheFramesSize() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      let file = try #require(await rig.video.takeSnapshot().file)
      let probe = try run(
        "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", file.path])
      #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "320,240")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func F3_F4_F5_F6_F7_F8_F11_F12_L3_deleteIsRestrictedIdempotentAndOutlivesTheSDK() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      let kept = try #require(await rig.video.takeSnapshot().file)
      let deleted = try #require(await rig.video.takeSnapshot().file)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      // A pending delete does not block shutdown (F12); files outlive the SDK (F8).
      var codes: [Int32] = []
      deleted.delete { codes.append($0) }
      #expect(session.close() == ok)
      await session.drainMain { !codes.isEmpty }
      for _ in 0..<3 { await session.drainMain() }
      #expect(codes == [ok])  // exactly one result (L3)
      #expect(!FileManager.default.fileExists(atPath: deleted.path))
      #expect(await deleted.delete() == ok)
      // A later initialize over the same cache removes nothing (F11), and its results are files of their
      // own (F3): the earlier snapshot is neither removed nor written over.
      let keptBytes = try Data(contentsOf: URL(fileURLWithPath: kept.path))
      let again = try SDKSession(cache: session.cache)
      #expect(again.initializeCode == ok)
      #expect(FileManager.default.fileExists(atPath: kept.path))
      let laterRig = ReplayRig()
      #expect(laterRig.play() == ok)
      await again.run(for: .milliseconds(300))
      var later: [String] = []
      for _ in 0..<3 { later.append(try #require(await laterRig.video.takeSnapshot().file?.path)) }
      #expect(Set(later + [kept.path, deleted.path]).count == 5, "\(later) \(kept.path) \(deleted.path)")
      #expect(later.allSatisfy { URL(fileURLWithPath: $0).deletingLastPathComponent() == session.media })
      #expect(try Data(contentsOf: URL(fileURLWithPath: kept.path)) == keptBytes)
      #expect(laterRig.tearDown().allSatisfy { $0 == ok })
      #expect(again.close() == ok)
      #expect(await kept.delete() == ok)
      #expect(!FileManager.default.fileExists(atPath: kept.path))
      // Only its own file: a path outside a media folder, or something that is not a regular file, is 6045.
      let outside = TiCloudStorageSnapshotFile(
        path: session.cache.url.appendingPathComponent("logs/cloudstorage.log").path)
      #expect(await outside.delete() == 6045)
      #expect(FileManager.default.fileExists(atPath: outside.path))
      let folder = session.media.appendingPathComponent("snapshot-folder.jpg")
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      #expect(await TiCloudStorageSnapshotFile(path: folder.path).delete() == 6045)
      #expect(FileManager.default.fileExists(atPath: folder.path))
    }
  }
}
