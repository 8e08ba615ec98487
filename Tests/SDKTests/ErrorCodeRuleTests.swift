import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

/// An export of `[from, to)` ms after the recording's start.
private func exportRequest(_ from: Int64, _ to: Int64, video: Int = 0, audio: Int? = 1) -> TiCloudStorageExportRequest {
  TiCloudStorageExportRequest(
    startTimeMs: recordingStart + from, endTimeMs: recordingStart + to, videoChannelId: video, audioChannelId: audio)
}

/// `code` is `value`, named `name` by `errorToString` (and by `TiErrorCode`).
private func expectCode(_ code: Int32, is value: Int32, named name: String) {
  #expect(code == value)
  #expect(TiCloudStorage.errorToString(value) == name)
  #expect(TiErrorCode(rawValue: value).name == name)
}

extension SDKRules {
  /// Rules.md group C: every code's number and name, and — where a facade call gives it at once — the
  /// call that returns it. (Codes that need a long run are produced by the tests named in the comments.)
  @Suite @MainActor struct ErrorCodes {
    private let whole = (recordingStart, recordingStart + 9000)

    @Test func L1_C2_okIsZeroAndMeansSuccess() throws {
      let session = try SDKSession()
      expectCode(TiCloudStorageErrorCode.ok, is: 0, named: "ok")
      #expect(session.initializeCode == 0)
      #expect(session.close() == 0)
    }

    @Test func C3_invalidArgumentForAnInvalidRange() throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      expectCode(TiCloudStorageErrorCode.invalidArgument, is: 6000, named: "invalidArgument")
      #expect(rig.replay.play(startTimeMs: 5, endTimeMs: 5) == 6000)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C4_notInitializedAfterShutdown() throws {
      let session = try SDKSession()
      #expect(session.close() == ok)
      expectCode(TiCloudStorageErrorCode.notInitialized, is: 6001, named: "notInitialized")
      #expect(TiCloudStorage(token: "t").updateToken("u") == 6001)
    }

    @Test func C5_C7_C24_listingFailuresKeepTheirCodes() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      expectCode(TiCloudStorageErrorCode.tokenExpired, is: 6014, named: "tokenExpired")
      expectCode(TiCloudStorageErrorCode.permissionDenied, is: 6024, named: "permissionDenied")
      expectCode(TiCloudStorageErrorCode.cloudStorageUnavailable, is: 6123, named: "cloudStorageUnavailable")
      // The service fails as the engine does (a kind); the SDK reports the seed's code.
      let cases: [(MediaError.Kind, TiErrorCode)] = [
        (.accessDenied, .permissionDenied), (.serviceUnavailable, .cloudStorageUnavailable),
        (.credentialsExpired, .tokenExpired),
      ]
      for (kind, code) in cases {
        session.service.failListings(with: kind)
        let result = try await session.pump {
          await storage.listRecordings(startTimeMs: self.whole.0, endTimeMs: self.whole.1)
        }
        #expect(result.code == code.rawValue && result.recordings.isEmpty)
      }
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func C6_alreadyInitializedForAnotherConfiguration() throws {
      let session = try SDKSession()
      expectCode(TiCloudStorageErrorCode.alreadyInitialized, is: 6022, named: "alreadyInitialized")
      #expect(TiCloudStorage.initialize(appId: "another-app") == 6022)
      #expect(session.close() == ok)
    }

    @Test func C8_inUseWhileSomethingHoldsResources() throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      expectCode(TiCloudStorageErrorCode.inUse, is: 6026, named: "inUse")
      #expect(TiCloudStorage.shutdown() == 6026)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C9_C10_notStartedAndNotBound() throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      let replay = storage.createReplay()
      expectCode(TiCloudStorageErrorCode.notStarted, is: 6027, named: "notStarted")
      expectCode(TiCloudStorageErrorCode.notBound, is: 6029, named: "notBound")
      #expect(replay.pause() == 6027)
      #expect(replay.play(startTimeMs: whole.0, endTimeMs: whole.1) == 6029)
      #expect(replay.dispose() == ok && storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func C11_notConfiguredForARawDumpWithoutChannels() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      expectCode(TiCloudStorageErrorCode.notConfigured, is: 6030, named: "notConfigured")
      #expect(await rig.replay.startRawDump(options: TiCloudStorageRawDumpOptions()).code == 6030)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C12_resourceExhaustedWhenEveryExportSlotIsTaken() async throws {
      expectCode(TiCloudStorageErrorCode.resourceExhausted, is: 6043, named: "resourceExhausted")
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      var logs: [ExportLog] = []
      for _ in 0..<TiCloudStorage.maximumConcurrentExports {
        let (start, log) = session.startExport(storage, exportRequest(0, 2000))
        #expect(start.code == ok)
        logs.append(log)
      }
      let (refused, refusedLog) = session.startExport(storage, exportRequest(0, 2000))
      #expect(refused.code == 6043 && refused.task == nil)
      for log in logs { await session.finish(log) }
      #expect(refusedLog.events.isEmpty)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func C13_6044WhenTheWorkDirectoryCannotBeMade() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let scratch = try TemporaryDirectory()
      let file = scratch.url.appendingPathComponent("a-file")
      try Data("x".utf8).write(to: file)
      expectCode(TiErrorCode.workDirectoryUnavailable.rawValue, is: 6044, named: "workDirectoryUnavailable")
      #expect(
        TiCloudStorage.initialize(appId: "a", endpoint: "", consoleLogEnabled: false, cacheDirectory: file.path) == 6044
      )
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func C14_C15_fileStatusUnreadableAndFileWriteFailed() async throws {
      expectCode(TiErrorCode.fileStatusUnreadable.rawValue, is: 6045, named: "fileStatusUnreadable")
      expectCode(TiCloudStorageErrorCode.fileWriteFailed, is: 6046, named: "fileWriteFailed")
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      // 6045: the snapshot's path became a directory: its status is not a regular file's, and it stays.
      let snapshot = try #require(await rig.video.takeSnapshot().file)
      try FileManager.default.removeItem(atPath: snapshot.path)
      try FileManager.default.createDirectory(atPath: snapshot.path, withIntermediateDirectories: false)
      #expect(await snapshot.delete() == 6045)
      var isDirectory: ObjCBool = false
      #expect(FileManager.default.fileExists(atPath: snapshot.path, isDirectory: &isDirectory) && isDirectory.boolValue)
      // 6046: the media folder is a file.
      try FileManager.default.removeItem(at: session.media)
      #expect(FileManager.default.createFile(atPath: session.media.path, contents: Data("x".utf8)))
      let unwritable = await rig.video.takeSnapshot()
      #expect(unwritable.code == 6046 && unwritable.file == nil)
      #expect(try Data(contentsOf: session.media) == Data("x".utf8))
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C16_unsupportedFormatWhenTheResolutionChangesInARecording() async throws {
      expectCode(TiCloudStorageErrorCode.unsupportedFormat, is: 6113, named: "unsupportedFormat")
      let library = try resolutionChangeLibrary("tipipe-sdk-c16")
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig(bindAudio: false)
      #expect(rig.play(0, 6000) == ok)
      let task = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .seconds(8))
      let result = try await session.pump { await task.stop() }
      #expect(result.code == 6113 && result.file == nil)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C17_ioFailedWhenTheUploadCannotBePackaged() async throws {
      expectCode(TiCloudStorageErrorCode.ioFailed, is: 6114, named: "ioFailed")
      let session = try SDKSession()
      // Where the package is made is a file.
      #expect(
        FileManager.default.createFile(
          atPath: session.cache.url.appendingPathComponent("upload").path, contents: Data("x".utf8)))
      let result = await TiRtcLogging.upload()
      #expect(result.code == 6114 && result.logId == nil && !result.succeeded)
      #expect(session.close() == ok)
    }

    @Test func C18_C19_cancelledAndRangeTooLarge() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      expectCode(TiCloudStorageErrorCode.cancelled, is: 6115, named: "cancelled")
      // A List whose awaiting task is cancelled before it ran (Q18).
      let listing = Task { @MainActor in
        await storage.listRecordings(startTimeMs: self.whole.0, endTimeMs: self.whole.1)
      }
      listing.cancel()
      let cancelled = try await session.pump { await listing.value }
      #expect(cancelled.code == 6115 && cancelled.recordings.isEmpty)
      expectCode(TiCloudStorageErrorCode.rangeTooLarge, is: 6117, named: "rangeTooLarge")
      let tooLong = try await session.pump {
        await storage.listRecordings(startTimeMs: self.whole.0, endTimeMs: self.whole.0 + 864_000_001)
      }
      #expect(tooLong.code == 6117)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func C20_noFrameBeforeAnyFrame() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      expectCode(TiCloudStorageErrorCode.noFrame, is: 6118, named: "noFrame")
      #expect(await rig.video.takeSnapshot().code == 6118)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C21_C25_noRecordableMediaAndStoppedExports() async throws {
      expectCode(TiCloudStorageErrorCode.noRecordableMedia, is: 6119, named: "noRecordableMedia")
      expectCode(TiCloudStorageErrorCode.stopped, is: 6124, named: "stopped")
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "t")
      let (empty, emptyLog) = session.startExport(storage, exportRequest(0, 9000, video: 7, audio: nil))
      #expect(empty.code == ok)
      await session.finish(emptyLog)
      #expect(emptyLog.result?.code == 6119 && emptyLog.result?.file == nil)
      let (stopping, stoppedLog) = session.startExport(storage, exportRequest(0, 9000))
      #expect(try #require(stopping.task).stop() == ok)
      await session.finish(stoppedLog)
      #expect(stoppedLog.result?.code == 6124 && stoppedLog.result?.file == nil)
      #expect(stoppedLog.result?.report?.termination == .cancelled)
      #expect(try FileManager.default.contentsOfDirectory(atPath: session.media.path).isEmpty)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
    }

    @Test func C22_recordingOverrunWhenWritingFallsBehind() async throws {
      expectCode(TiCloudStorageErrorCode.recordingOverrun, is: 6120, named: "recordingOverrun")
      let session = try SDKSession(recorderPendingLimit: 1)
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      let task = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .milliseconds(500))
      let result = try await session.pump { await task.stop() }
      #expect(result.code == 6120 && result.file == nil)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    /// How the last of two 3 s objects of a library is spoiled, and the play's error it gives.
    enum Spoiled: CaseIterable {
      case corrupt, missing, unreadable
    }

    @Test(arguments: Spoiled.allCases)
    func C23_C27_C28_aRecordingThatCannotBeReadEndsThePlay(_ spoiled: Spoiled) async throws {
      let library = try TemporaryDirectory("tipipe-sdk-spoiled")
      try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library.url)
      let code: Int32
      switch spoiled {
      case .corrupt:
        expectCode(TiCloudStorageErrorCode.recordingUnreadable, is: 6122, named: "recordingUnreadable")
        try LibraryFaults.corruptObject(segment: 1, in: library.url)
        code = 6122
      case .missing:
        expectCode(TiCloudStorageErrorCode.recordingNotFound, is: 6134, named: "recordingNotFound")
        try LibraryFaults.removeObject(segment: 1, in: library.url)
        code = 6134
      case .unreadable:
        expectCode(TiCloudStorageErrorCode.recordingDownloadFailed, is: 6135, named: "recordingDownloadFailed")
        // Its file is a directory: the read fails (a download that cannot be had).
        let segment = try RecordingIndex.load(library: library.url).segments.sorted { $0.startMs < $1.startMs }[1]
        try FileManager.default.removeItem(at: segment.fileURL(in: library.url))
        try FileManager.default.createDirectory(
          at: segment.fileURL(in: library.url), withIntermediateDirectories: false)
        code = 6135
      }
      let session = try SDKSession(library: library.url)
      let rig = ReplayRig()
      #expect(rig.play(0, 6000) == ok)
      await session.run(for: .seconds(8))
      #expect(rig.log.entries.filter { $0 == .error(code) }.count == 1, "\(rig.log.entries.suffix(5))")
      #expect(!rig.log.entries.contains(.completed))
      #expect(!rig.view.renderedTimes.isEmpty)  // the first object played
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func C29_C30_aListWithoutNetworkOrDNS() async throws {
      expectCode(TiCloudStorageErrorCode.networkUnavailable, is: 6136, named: "networkUnavailable")
      expectCode(TiCloudStorageErrorCode.endpointDnsResolutionFailed, is: 6137, named: "endpointDnsResolutionFailed")
      // Nothing listens at the first endpoint: the host refuses, so it is reachable and its service down
      // (6123 after the retries; the local network down, 6136, is produced through the same facade by
      // `tipipe list` in a network namespace of its own: NetworkOutageTests). The second's host cannot
      // exist (.invalid, RFC 6761).
      var configuration = ServerConfiguration(root: sharedLibrary, secret: "s")
      configuration.port = 0
      let server = try ReferenceServer(configuration)
      let silent = server.endpoint
      server.stop()
      for (endpoint, code) in [(silent, Int32(6123)), ("http://no-such-host.invalid", 6137)] {
        let cache = try TemporaryDirectory("tipipe-sdk-network")
        TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
        #expect(
          TiCloudStorage.initialize(
            appId: "a", endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: cache.url.path)
            == ok)
        let storage = TiCloudStorage(token: "t")
        let listed = await storage.listRecordings(startTimeMs: whole.0, endTimeMs: whole.1)
        #expect(listed.code == code, "\(endpoint)")
        #expect(storage.dispose() == ok)
        #expect(TiCloudStorage.shutdown() == ok)
      }
    }
  }
}
