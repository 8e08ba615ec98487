import Foundation
import MediaTestSupport
import Nodes
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

/// `code` is `value`, named `name` by `errorToString` (and by the engine's `TiErrorCode`).
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
      for code in [TiErrorCode.permissionDenied, .cloudStorageUnavailable, .tokenExpired] {
        session.service.failListings(with: code)
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

    @Test func C12_resourceExhaustedNamesTheLimits() {
      // Produced by S10 (snapshots) and E7 (exports) in their tests.
      expectCode(TiCloudStorageErrorCode.resourceExhausted, is: 6043, named: "resourceExhausted")
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

    @Test func C14_C15_C16_C17_fileAndFormatCodes() {
      // 6045 by F-rule tests (delete), 6046 by T15 and X4, 6113 by T12 and R73, 6114 by the upload.
      expectCode(TiErrorCode.fileStatusUnreadable.rawValue, is: 6045, named: "fileStatusUnreadable")
      expectCode(TiCloudStorageErrorCode.fileWriteFailed, is: 6046, named: "fileWriteFailed")
      expectCode(TiCloudStorageErrorCode.unsupportedFormat, is: 6113, named: "unsupportedFormat")
      expectCode(TiCloudStorageErrorCode.ioFailed, is: 6114, named: "ioFailed")
    }

    @Test func C18_C19_cancelledAndRangeTooLarge() async throws {
      let session = try SDKSession()
      let storage = TiCloudStorage(token: "device-token")
      expectCode(TiCloudStorageErrorCode.cancelled, is: 6115, named: "cancelled")
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

    @Test func C21_C22_C23_C25_taskCodes() {
      // 6119 by T14, 6120 by T13, 6122 by R59 and O24, 6124 by the export stop tests.
      expectCode(TiCloudStorageErrorCode.noRecordableMedia, is: 6119, named: "noRecordableMedia")
      expectCode(TiCloudStorageErrorCode.recordingOverrun, is: 6120, named: "recordingOverrun")
      expectCode(TiCloudStorageErrorCode.recordingUnreadable, is: 6122, named: "recordingUnreadable")
      expectCode(TiCloudStorageErrorCode.stopped, is: 6124, named: "stopped")
    }

    @Test func C27_C28_C29_C30_recordingAndNetworkCodes() {
      // 6134/6135 by R57/R58, 6136/6137 by R62 and the upload to a stopped server (X10).
      expectCode(TiCloudStorageErrorCode.recordingNotFound, is: 6134, named: "recordingNotFound")
      expectCode(TiCloudStorageErrorCode.recordingDownloadFailed, is: 6135, named: "recordingDownloadFailed")
      expectCode(TiCloudStorageErrorCode.networkUnavailable, is: 6136, named: "networkUnavailable")
      expectCode(TiCloudStorageErrorCode.endpointDnsResolutionFailed, is: 6137, named: "endpointDnsResolutionFailed")
    }
  }
}
