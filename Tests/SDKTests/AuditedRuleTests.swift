import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok
private let notStarted = TiCloudStorageErrorCode.notStarted

extension SDKRules {
  /// Rules an audit of the suite found without a test of their own (groups D, F, L, O, R, E).
  @Suite @MainActor struct Audited {
    @Test func D9_noRefreshAndNoRetryAfterTokenExpired() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      session.service.failListings(with: .credentialsExpired)
      let before = session.service.tokens.withLock { $0.count }
      let first = try await session.pump {
        await storage.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000)
      }
      #expect(first.code == TiCloudStorageErrorCode.tokenExpired)
      // Exactly one request: no retry, and no other token was tried.
      let asked = session.service.tokens.withLock { Array($0.dropFirst(before)) }
      #expect(asked == ["device-token"])
      // Nothing happens on its own afterwards either.
      await session.run(for: .seconds(60))
      #expect(session.service.tokens.withLock { $0.count } == before + 1)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func F9_theSDKOffersNoKeepCallItsFileObjectsHaveOnlyPathDurationAndDelete() throws {
      // Read from the sources (the symbol graph of the same declarations is checked by scripts/test.sh's
      // DocC build): the public functions of TiCloudStorage.
      let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TiCloudStorage")
      let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
        .filter { $0.hasSuffix(".swift") }
      #expect(files.count > 20)
      var names: [String] = []
      for file in files {
        let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
        for line in text.split(separator: "\n") {
          let trimmed = line.trimmingCharacters(in: .whitespaces)
          guard trimmed.hasPrefix("public ") || trimmed.hasPrefix("open "), let range = trimmed.range(of: "func ")
          else { continue }
          names.append(String(trimmed[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
        }
      }
      #expect(names.contains("delete") && names.contains("exportRecording"))  // the scan sees the API
      let keeping = names.filter {
        $0.range(
          of: "photo|album|gallery|cameraroll|save|persist|keep", options: [.regularExpression, .caseInsensitive])
          != nil || $0.range(of: "^(move|copy)", options: [.regularExpression, .caseInsensitive]) != nil
      }
      #expect(keeping.isEmpty, "\(keeping)")
      // A file object holds its path (and duration) and can only delete it.
      let snapshotMembers = Mirror(reflecting: TiCloudStorageSnapshotFile(path: "/x")).children.compactMap(\.label)
      let recordingMembers = Mirror(reflecting: TiCloudStorageRecordingFile(path: "/x", durationMs: 1)).children
        .compactMap(\.label)
      #expect(snapshotMembers == ["path"] && recordingMembers == ["path", "durationMs"])
    }

    @Test func F9_theAppKeepsAFileByCopyingOrMovingItAndTheSDKLeavesTheCopyAlone() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 3000) == ok)
      await session.run(for: .milliseconds(300))
      // One file of each kind.
      let snapshot = try #require(await rig.video.takeSnapshot().file)
      let recording = try #require(rig.replay.startRecording(videoChannelId: 0, audioChannelId: 1).task)
      await session.run(for: .milliseconds(2500))
      let recorded = try #require(try await session.pump { await recording.stop() }.file)
      let (start, log) = session.startExport(
        rig.storage,
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 3000, videoChannelId: 0, audioChannelId: 1))
      #expect(start.code == ok)
      await session.finish(log)
      let exported = try #require(log.result?.file)
      // The app keeps them: a copy, a move, a copy.
      let kept = try TemporaryDirectory("tipipe-kept")
      let keptSnapshot = kept.url.appendingPathComponent("snapshot.jpg")
      let keptRecording = kept.url.appendingPathComponent("recording.mp4")
      let keptExport = kept.url.appendingPathComponent("export.mp4")
      try FileManager.default.copyItem(atPath: snapshot.path, toPath: keptSnapshot.path)
      try FileManager.default.moveItem(atPath: recorded.path, toPath: keptRecording.path)
      try FileManager.default.copyItem(atPath: exported.path, toPath: keptExport.path)
      let bytes = try [keptSnapshot, keptRecording, keptExport].map { try Data(contentsOf: $0) }
      // The SDK deletes its own paths (the moved one is gone already: ok, F5), never the copies.
      #expect(await snapshot.delete() == ok)
      #expect(await recorded.delete() == ok)
      #expect(await exported.delete() == ok)
      for path in [snapshot.path, recorded.path, exported.path] {
        #expect(!FileManager.default.fileExists(atPath: path))
      }
      #expect(try [keptSnapshot, keptRecording, keptExport].map { try Data(contentsOf: $0) } == bytes)
      // A file object pointed at the app's copy cannot remove it (F6, F7: outside the media folder).
      #expect(await TiCloudStorageSnapshotFile(path: keptSnapshot.path).delete() == 6045)
      #expect(FileManager.default.fileExists(atPath: keptSnapshot.path))
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
      // A later initialize of the same work root (which clears what a dead process left unfinished)
      // leaves the kept files as they were.
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: session.service)
      #expect(
        TiCloudStorage.initialize(
          appId: "test-app", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: false,
          cacheDirectory: session.cache.url.path) == ok)
      #expect(TiCloudStorage.shutdown() == ok)
      #expect(try [keptSnapshot, keptRecording, keptExport].map { try Data(contentsOf: $0) } == bytes)
      let codecs = try [keptSnapshot, keptRecording, keptExport].map {
        try run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", $0.path])
          .split(separator: "\n").sorted()
      }
      #expect(codecs == [["mjpeg"], ["aac", "h264"], ["aac", "h264"]])
    }

    @Test func L34_gettersKeepTheirLastValuesAfterDispose() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 2000) == ok)
      await session.run(for: .seconds(3))
      #expect(rig.log.entries.contains(.completed))
      let position = rig.replay.currentTimeMs
      #expect(position == recordingStart + 2000)
      #expect(rig.video.detach() == ok && rig.audio.detach() == ok && rig.replay.dispose() == ok)
      #expect(rig.replay.currentTimeMs == position)
      #expect(rig.replay.speed == .x1)
      for code in [rig.video.detachView(), rig.video.dispose(), rig.audio.dispose(), rig.storage.dispose()] {
        #expect(code == ok)
      }
      #expect(session.close() == ok)
    }

    @Test func O31_setVolumeChangesOnlyThatOutput() async throws {
      let session = try SDKSession()
      let first = ReplayRig(bindVideo: false)
      let second = ReplayRig(bindVideo: false)
      #expect(first.audio.setVolume(30) == ok && second.audio.setVolume(70) == ok)
      #expect(first.play(0, 2000) == ok && second.play(0, 2000) == ok)
      await session.run(for: .milliseconds(500))
      #expect(first.audio.setVolume(10) == ok)
      await session.run(for: .seconds(2))
      #expect(Set(second.device.played.map(\.volume)) == [70])
      #expect(Set(first.device.played.map(\.volume)) == [30, 10])
      #expect(first.tearDown().allSatisfy { $0 == ok } && second.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R21_aPlayOverTenDaysEndsWithRangeTooLarge() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 864_000_001) == ok)
      await session.run(for: .milliseconds(100))
      #expect(rig.log.entries.filter { $0 == .error(TiCloudStorageErrorCode.rangeTooLarge) }.count == 1)
      #expect(!rig.log.entries.contains(.completed))
      // Ten days exactly is a play like any other.
      #expect(rig.play(0, 864_000_000) == ok)
      await session.run(for: .seconds(1))
      #expect(rig.video.state == .rendering)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R26_R28_R30_pauseResumeAndSeekNeedARunningPlay() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      // Never started; a seek out of any range is notStarted too (R30).
      #expect(rig.replay.pause() == notStarted && rig.replay.resume() == notStarted)
      #expect(rig.replay.seek(toTimeMs: recordingStart) == notStarted)
      #expect(rig.replay.seek(toTimeMs: -5) == notStarted)
      // Naturally completed.
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(rig.log.entries.contains(.completed))
      let position = rig.replay.currentTimeMs
      #expect(rig.replay.pause() == notStarted && rig.replay.resume() == notStarted)
      #expect(rig.replay.seek(toTimeMs: recordingStart + 500) == notStarted)
      #expect(rig.replay.currentTimeMs == position)
      // Failed.
      session.service.failListings(with: .serviceUnavailable)
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .milliseconds(100))
      #expect(rig.log.entries.contains(.error(TiCloudStorageErrorCode.cloudStorageUnavailable)))
      #expect(rig.replay.resume() == notStarted && rig.replay.seek(toTimeMs: recordingStart) == notStarted)
      session.service.failListings(with: nil)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R41_aMutedAudioOutputShowsPlaying() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.replay.setSpeed(.x2) == ok)
      #expect(rig.play(0, 3000) == ok)
      await session.run(for: .milliseconds(500))
      await session.drainMain()
      #expect(rig.audio.state == .playing)
      // Off 1× nothing is played (muted, not decoded, R40), yet the state is the normal one.
      #expect(rig.device.played.isEmpty)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func E40_shutdownIsInUseWhileAnExportRuns() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      var finished = false
      let started = storage.exportRecording(
        TiCloudStorageExportRequest(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000, videoChannelId: 0),
        progress: nil
      ) { _ in finished = true }
      #expect(started.code == ok)
      #expect(TiCloudStorage.shutdown() == TiCloudStorageErrorCode.inUse)
      #expect(storage.dispose() == TiCloudStorageErrorCode.inUse)
      try await session.run(until: "the export's completion") { finished }
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func D10_redoingAfterUpdateTokenSucceedsWithTheNewToken() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      session.service.failListings(with: .credentialsExpired)
      let failed = try await session.pump {
        await rig.storage.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000)
      }
      #expect(failed.code == TiCloudStorageErrorCode.tokenExpired)
      // The service now accepts the device's new token.
      session.service.failListings(with: nil)
      #expect(rig.storage.updateToken("fresh-token") == ok)
      let listed = try await session.pump {
        await rig.storage.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000)
      }
      #expect(listed.code == ok && listed.recordings.count == 2)
      #expect(session.service.tokens.withLock { $0.last } == "fresh-token")
      #expect(rig.play(0, 1000) == ok)
      await session.run(for: .seconds(2))
      #expect(rig.log.entries.contains(.completed))
      #expect(session.service.tokens.withLock { $0.last } == "fresh-token")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R15_R50_aPlayStartsAtItsInitialTimeAndReportsOnlyTimesInItsRange() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(1000, 2500, initial: 1500) == ok)
      var positions: [Int64] = []
      for _ in 0..<20 {
        await session.run(for: .milliseconds(100))
        if let position = rig.replay.currentTimeMs { positions.append(position) }
      }
      // The first frame shown is the first not earlier than 1.5 s (25 fps: frames at 1.48 and 1.52 s).
      let first = try #require(rig.view.renderedTimes.first)
      #expect(first == (recordingStart + 1520) * 1000)
      #expect(!positions.isEmpty)
      let range = (recordingStart + 1000)...(recordingStart + 2500)
      #expect(positions.allSatisfy { range.contains($0) } && rig.log.times.allSatisfy { range.contains($0) })
      // Without an initial time, between keyframes: from the start, not from the keyframe before it.
      let before = rig.view.renderedTimes.count
      let timesBefore = rig.log.times.count
      #expect(rig.play(1010, 3000) == ok)
      await session.run(for: .seconds(3))
      #expect(rig.view.renderedTimes.dropFirst(before).first == (recordingStart + 1040) * 1000)
      let times = rig.log.times.dropFirst(timesBefore)
      #expect(!times.isEmpty && times.allSatisfy { (recordingStart + 1010...recordingStart + 3000).contains($0) })
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R67_onCompletedComesWhenThePositionReachesTheEnd() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 2000) == ok)
      await session.run(for: .seconds(3))
      let entries = rig.log.entries.filter {
        switch $0 {
        case .time, .completed: true
        default: false
        }
      }
      #expect(entries.suffix(2) == [.time(recordingStart + 2000), .completed])
      #expect(rig.replay.currentTimeMs == recordingStart + 2000)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func E45_E10_E19_theReportIsNilUntilTheResultAndBothOverloadsAgree() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      let request = TiCloudStorageExportRequest(
        startTimeMs: recordingStart, endTimeMs: recordingStart + 9000, videoChannelId: 0, audioChannelId: 1)
      var detailed: TiCloudStorageExportResult?
      // What `task.report` held at each progress before the end (E45: nil while the export runs).
      var reportsWhileRunning: [(Double, TiCloudStorageExportReport?)] = []
      var started: TiCloudStorageExportTaskStartResult?
      started = storage.exportRecording(
        request, progress: { value in reportsWhileRunning.append((value, started?.task?.report)) },
        progressDetail: nil, onRecordingGap: nil, callbackThread: .main
      ) { detailed = $0 }
      let task = try #require(started?.task)
      #expect(task.report == nil)
      try await session.run(until: "the detailed export's result") { detailed != nil }
      let result = try #require(detailed)
      let report = try #require(task.report)
      let final = try #require(result.report)
      // The same report as the completion's, in every part (as `tipipe export --report` writes it).
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      let json = try encoder.encode(final)
      #expect(try encoder.encode(report) == json)
      // Seen from the progress callbacks: nil, or (a progress delivered after the export ended) that same
      // report: never one of a running export.
      #expect(reportsWhileRunning.contains { $0.0 < 1 }, "no progress below 1.0 was delivered")
      for (value, seen) in reportsWhileRunning {
        if let seen { #expect(try encoder.encode(seen) == json, "a report at progress \(value)") }
      }
      #expect(report.coveredDurationMs == final.coveredDurationMs && report.termination == .exhausted)
      #expect(!final.segments.isEmpty && !final.gaps.isEmpty)  // the fixture's hole: both lists say something
      // A file exactly when ok (E19), and the simple overload reports the same outcome (E10).
      #expect((result.code == ok) == (result.file != nil))
      var simple: TiCloudStorageRecordingResult?
      _ = storage.exportRecording(request, progress: nil) { simple = $0 }
      try await session.run(until: "the simple export's result") { simple != nil }
      #expect(simple?.code == result.code && (simple?.file != nil) == (result.file != nil))
      #expect(simple?.file?.durationMs == result.file?.durationMs)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func L2_refusedCallsChangeNothingAndCallNothingBack() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.audio.setVolume(40) == ok)
      // Each refused: a bad range, an Output bound elsewhere, a volume out of range, a recording without
      // a play, a seek without a play, a dump without channels, an export with a bad range.
      #expect(rig.play(5, 5) == TiCloudStorageErrorCode.invalidArgument)
      let other = rig.storage.createReplay()
      #expect(rig.video.attach(replay: other, channelId: 0) == TiCloudStorageErrorCode.inUse)
      #expect(rig.audio.setVolume(101) == TiCloudStorageErrorCode.invalidArgument)
      #expect(rig.replay.startRecording(videoChannelId: 0).task == nil)
      #expect(rig.replay.seek(toTimeMs: recordingStart) == notStarted)
      #expect(await rig.replay.startRawDump(options: TiCloudStorageRawDumpOptions()).dump == nil)
      let export = rig.storage.exportRecording(
        TiCloudStorageExportRequest(startTimeMs: 5, endTimeMs: 5, videoChannelId: 0), progress: nil
      ) { _ in Issue.record("a refused export called back") }
      #expect(export.task == nil)
      await session.run(for: .seconds(1))
      await session.drainMain()
      // No callback, no state change, no file, and the earlier settings hold.
      #expect(rig.log.entries.isEmpty)
      #expect(rig.video.state == .idle && rig.audio.state == .idle && rig.replay.currentTimeMs == nil)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(500))
      #expect(Set(rig.device.played.map(\.volume)) == [40])
      // The same refusals while the play renders: it goes on as it was (its frame, bindings, volume, and
      // position), and no task, file or callback comes of them.
      let playing = try #require(rig.replay.currentTimeMs)
      let entries = rig.log.entries.count
      #expect(rig.play(5, 5) == TiCloudStorageErrorCode.invalidArgument)
      #expect(rig.video.attach(replay: other, channelId: 0) == TiCloudStorageErrorCode.inUse)
      #expect(rig.audio.setVolume(150) == TiCloudStorageErrorCode.invalidArgument)
      #expect(rig.replay.seek(toTimeMs: recordingStart + 9000) == TiCloudStorageErrorCode.invalidArgument)
      #expect(rig.replay.startRecording(videoChannelId: 256).task == nil)
      #expect(await rig.replay.startRawDump(options: TiCloudStorageRawDumpOptions()).dump == nil)
      #expect(
        rig.storage.exportRecording(
          TiCloudStorageExportRequest(startTimeMs: 5, endTimeMs: 5, videoChannelId: 0), progress: nil
        ) { _ in Issue.record("a refused export called back") }.task == nil)
      #expect(rig.replay.currentTimeMs == playing)
      #expect(await rig.video.takeSnapshot().code == ok)  // the frame shown is still there
      #expect(rig.video.state == .rendering && rig.audio.state == .playing)
      #expect(rig.video.core.binding?.replay === rig.replay && rig.video.core.binding?.channel == 0)
      await session.run(for: .milliseconds(500))
      #expect(try #require(rig.replay.currentTimeMs) > playing)
      #expect(Set(rig.device.played.map(\.volume)) == [40])
      let later = rig.log.entries.dropFirst(entries)
      #expect(later.allSatisfy { if case .time = $0 { true } else { false } }, "\(Array(later))")
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).count == 1)  // the snapshot
      #expect(other.dispose() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func R32_aSupersededSeekIsReportedInTheLog() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .milliseconds(200))
      #expect(rig.replay.seek(toTimeMs: recordingStart + 2000) == ok)
      #expect(rig.replay.seek(toTimeMs: recordingStart + 7000) == ok)
      await session.run(for: .milliseconds(200))
      #expect(rig.replay.currentTimeMs.map { $0 >= recordingStart + 7000 } == true)
      let log = try String(
        contentsOf: session.cache.url.appendingPathComponent("logs/cloudstorage.log"), encoding: .utf8)
      #expect(
        log.contains("the seek to \(recordingStart + 2000) was superseded by a seek to \(recordingStart + 7000)"))
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }
  }
}
