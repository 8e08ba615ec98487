import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok
private let notInitialized = TiCloudStorageErrorCode.notInitialized
private let inUse = TiCloudStorageErrorCode.inUse

extension SDKRules {
  /// Rules.md group L: the runtime and the conventions every object follows.
  @Suite @MainActor struct Lifecycle {
    @Test func L6_L7_constructorsNeverFailAndMethodsBeforeInitializeReportNotInitialized() async {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      #expect(TiCloudStorage.shutdown() == ok)
      let storage = TiCloudStorage(token: "t")
      let replay = storage.createReplay()
      let video = TiCloudStorageVideoOutput()
      let audio = TiCloudStorageAudioOutput()
      #expect(storage.updateToken("u") == notInitialized)
      #expect(replay.play(startTimeMs: 0, endTimeMs: 10) == notInitialized)
      #expect(replay.pause() == notInitialized)
      #expect(replay.setSpeed(.x2) == notInitialized)
      #expect(video.attach(replay: replay, channelId: 0) == notInitialized)
      #expect(video.attachView(NullRenderer()) == notInitialized)
      #expect(audio.setVolume(10) == notInitialized)
      #expect(await video.takeSnapshot().code == notInitialized)
      #expect(await storage.listRecordings(startTimeMs: 0, endTimeMs: 10).code == notInitialized)
      #expect(TiCloudStorage.errorToString(6001) == "notInitialized")
      // Nothing was acquired: shutdown is still idempotent.
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L9_anEmptyAppIdIsRefusedAndLeavesTheSDKUninitialized() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let cache = try TemporaryDirectory("tipipe-sdk-cache")
      #expect(
        TiCloudStorage.initialize(appId: "", endpoint: "", consoleLogEnabled: false, cacheDirectory: cache.url.path)
          == TiCloudStorageErrorCode.invalidArgument)
      #expect(TiCloudStorage.cacheDirectory == nil)
      #expect(TiCloudStorage(token: "t").updateToken("u") == notInitialized)
    }

    @Test func L8_L10_L13_anEmptyEndpointIsTheEmbeddedLibraryUnderTheWorkRoot() throws {
      let cache = try TemporaryDirectory("tipipe-sdk-cache")
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      #expect(
        TiCloudStorage.initialize(appId: "a", endpoint: "", consoleLogEnabled: false, cacheDirectory: cache.url.path)
          == ok)
      let configuration = try #require(Runtime.shared.configuration)
      #expect(configuration.endpoint == cache.url.appendingPathComponent("library").absoluteString + "/")
      // Logs and media live under the work root.
      var isDirectory: ObjCBool = false
      #expect(
        FileManager.default.fileExists(atPath: cache.url.appendingPathComponent("logs").path, isDirectory: &isDirectory)
      )
      #expect(isDirectory.boolValue)
      #expect(FileManager.default.fileExists(atPath: cache.url.appendingPathComponent("media").path))
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L8_initializeWithTheAppIdAloneUsesTheDefaultWorkRoot() throws {
      let home = try TemporaryDirectory("tipipe-sdk-xdg")
      let previous = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"]
      setenv("XDG_CACHE_HOME", home.url.path, 1)
      defer {
        if let previous { setenv("XDG_CACHE_HOME", previous, 1) } else { unsetenv("XDG_CACHE_HOME") }
      }
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      #expect(TiCloudStorage.initialize(appId: "a") == ok)
      #expect(TiCloudStorage.cacheDirectory == home.url.appendingPathComponent("tirtc").path)
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L11_theLogFileIsWrittenAndTheConsoleOnlyWhenEnabled() throws {
      for console in [false, true] {
        TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
        let cache = try TemporaryDirectory("tipipe-sdk-cache")
        let captured = cache.url.appendingPathComponent("stderr.txt")
        #expect(FileManager.default.createFile(atPath: captured.path, contents: nil))
        let saved = dup(2)
        let file = open(captured.path, O_WRONLY)
        dup2(file, 2)
        let code = TiCloudStorage.initialize(
          appId: "a", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: console, cacheDirectory: cache.url.path
        )
        _ = TiCloudStorage.shutdown()
        dup2(saved, 2)
        close(saved)
        close(file)
        #expect(code == ok)
        let log = try String(contentsOf: cache.url.appendingPathComponent("logs/cloudstorage.log"), encoding: .utf8)
        #expect(log.contains("initialized: appId a"))
        #expect(log.contains("shut down"))
        let written = try String(contentsOf: captured, encoding: .utf8)
        #expect(written.contains("initialized: appId a") == console)
        // Other suites run in parallel and may write to the process's stderr meanwhile: what counts is
        // whether any line of the SDK's log reached it.
        let echoed = log.split(separator: "\n").contains { !$0.isEmpty && written.contains($0) }
        #expect(echoed == console)
      }
    }

    @Test func L12_aWorkRootThatCannotBeCreatedGives6044AndNoInitialization() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let cache = try TemporaryDirectory("tipipe-sdk-cache")
      let blocker = cache.url.appendingPathComponent("file")
      #expect(FileManager.default.createFile(atPath: blocker.path, contents: Data("x".utf8)))
      let code = TiCloudStorage.initialize(
        appId: "a", endpoint: "", consoleLogEnabled: false, cacheDirectory: blocker.appendingPathComponent("tirtc").path
      )
      #expect(code == 6044)
      #expect(TiCloudStorage.cacheDirectory == nil)
      // The regular file in the way is untouched.
      #expect(try Data(contentsOf: blocker) == Data("x".utf8))
    }

    @Test func L14_L15_L16_reinitializingKeepsTheRunningConfiguration() async throws {
      let session = try SDKSession()
      let other = try TemporaryDirectory("tipipe-sdk-cache")
      let endpoint = sharedLibrary.absoluteString
      let root = session.cache.url.path
      #expect(
        TiCloudStorage.initialize(appId: "test-app", endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: root)
          == ok)
      #expect(
        TiCloudStorage.initialize(appId: "other", endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: root)
          == TiCloudStorageErrorCode.alreadyInitialized)
      #expect(
        TiCloudStorage.initialize(appId: "test-app", endpoint: endpoint, consoleLogEnabled: true, cacheDirectory: root)
          == TiCloudStorageErrorCode.alreadyInitialized)
      #expect(
        TiCloudStorage.initialize(
          appId: "test-app", endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: other.url.path)
          == TiCloudStorageErrorCode.alreadyInitialized)
      // The running configuration and its objects are unaffected.
      #expect(TiCloudStorage.cacheDirectory == session.cache.url.path)
      let storage = TiCloudStorage(token: "t")
      let listed = try await session.pump {
        await storage.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 9000)
      }
      #expect(listed.recordings.count == 2)
      #expect(storage.dispose() == ok)
      #expect(session.close() == ok)
      #expect(
        TiCloudStorage.initialize(
          appId: "other", endpoint: endpoint, consoleLogEnabled: false, cacheDirectory: other.url.path) == ok)
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L20_shutdownIsIdempotent() {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      #expect(TiCloudStorage.shutdown() == ok)
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L21_L22_shutdownIsRefusedWhileAnythingUsedIsAlive() async throws {
      let session = try SDKSession()
      // Only constructed: nothing held (L22).
      let storage = TiCloudStorage(token: "t")
      let replay = storage.createReplay()
      let video = TiCloudStorageVideoOutput()
      #expect(session.close() == ok)
      let second = try SDKSession()
      // They belong to the runtime that was shut down (L23): they neither work nor hold the new one.
      #expect(video.attachView(NullRenderer()) == notInitialized)
      #expect(storage.updateToken("u") == notInitialized)
      #expect(replay.setSpeed(.x2) == notInitialized)
      // Objects of this runtime: a used one holds it until disposed (L21).
      let fresh = TiCloudStorage(token: "t")
      let freshReplay = fresh.createReplay()
      let freshVideo = TiCloudStorageVideoOutput()
      #expect(freshVideo.attachView(NullRenderer()) == ok)
      #expect(TiCloudStorage.shutdown() == inUse)
      #expect(freshVideo.detachView() == ok)
      #expect(TiCloudStorage.shutdown() == inUse)  // used, not disposed
      #expect(freshVideo.dispose() == ok)
      #expect(fresh.updateToken("u") == ok)
      #expect(TiCloudStorage.shutdown() == inUse)
      // A pending query holds it too.
      fresh.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 1000) { _ in }
      #expect(fresh.dispose() == inUse)
      await second.drainMain()
      #expect(freshReplay.dispose() == ok)
      #expect(fresh.dispose() == ok)
      // The objects of the first runtime never held anything.
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L23_objectsOfAnEarlierRuntimeStayShutDownEvenIfOnlyConstructed() async throws {
      var session = try SDKSession()
      let old = TiCloudStorage(token: "device-token")
      let oldReplay = old.createReplay()
      let oldBackground = old.createReplay(callbackThread: .background)
      let oldVideo = TiCloudStorageVideoOutput()
      let oldAudio = TiCloudStorageAudioOutput(device: CaptureAudioDevice())
      // Used before the shutdown, then released: the same after it.
      let used = TiCloudStorageVideoOutput()
      #expect(used.attachView(NullRenderer()) == ok)
      #expect(used.detachView() == ok)
      #expect(used.dispose() == ok)
      #expect(session.close() == ok)  // L22: the constructed ones hold nothing
      // Shut down (L7).
      #expect(old.updateToken("u") == notInitialized)
      #expect(oldReplay.setSpeed(.x2) == notInitialized)
      #expect(oldVideo.attachView(FrameCaptureRenderer()) == notInitialized)
      #expect(oldAudio.setVolume(10) == notInitialized)
      // A later initialize does not adopt them: they belong to the runtime they were created under.
      session = try SDKSession()
      let rig = ReplayRig()
      let range = (start: recordingStart, end: recordingStart + 9000)
      #expect(old.updateToken("u") == notInitialized)
      let listed = try await session.pump { await old.listRecordings(startTimeMs: range.start, endTimeMs: range.end) }
      #expect(listed.code == notInitialized)
      let days = try await session.pump { await old.listRecordingDays(startDate: "2026-12-01", endDate: "2026-12-02") }
      #expect(days.code == notInitialized)
      let export = old.exportRecording(
        TiCloudStorageExportRequest(startTimeMs: range.start, endTimeMs: range.start + 2000, videoChannelId: 0),
        progress: nil
      ) { _ in Issue.record("a refused export completes") }
      #expect(export.code == notInitialized && export.task == nil)
      for replay in [oldReplay, oldBackground] {
        #expect(replay.play(startTimeMs: range.start, endTimeMs: range.start + 1000) == notInitialized)
        #expect(replay.pause() == notInitialized)
        #expect(replay.resume() == notInitialized)
        #expect(replay.seek(toTimeMs: range.start) == notInitialized)
        #expect(replay.setSpeed(.x2) == notInitialized)
        #expect(replay.stop() == notInitialized)
        #expect(replay.startRecording(videoChannelId: 0).code == notInitialized)
        let dump = await replay.startRawDump(options: TiCloudStorageRawDumpOptions(videoChannelIds: [0]))
        #expect(dump.code == notInitialized)
      }
      #expect(oldVideo.attachView(FrameCaptureRenderer()) == notInitialized)
      #expect(oldVideo.attach(replay: rig.replay, channelId: 2) == notInitialized)
      #expect(oldVideo.detach() == notInitialized)
      #expect(oldVideo.detachView() == notInitialized)
      #expect(await oldVideo.takeSnapshot().code == notInitialized)
      #expect(oldAudio.setVolume(10) == notInitialized)
      #expect(oldAudio.attach(replay: rig.replay, channelId: 3) == notInitialized)
      #expect(oldAudio.detach() == notInitialized)
      // Across runtimes: a new Output cannot bind the old Replay; a Replay the old instance makes now is
      // the old runtime's too (as for a disposed instance, D13).
      let newOutput = TiCloudStorageVideoOutput()
      #expect(newOutput.attach(replay: oldReplay, channelId: 0) == notInitialized)
      #expect(newOutput.dispose() == ok)
      #expect(old.createReplay().setSpeed(.x2) == notInitialized)
      // The live objects are untouched.
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(300))
      #expect(rig.video.state == .rendering)
      #expect(oldVideo.state == .idle && oldAudio.state == .idle)
      // The dead objects do not block the new runtime's shutdown.
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func L24_L25_L26_insideACallbackItsOwnObjectsCannotBeStoppedOrDisposed() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let other = ReplayRig()
      var codes: [String: Int32] = [:]
      rig.replay.onTimeChanged = { [rig, other] _ in
        guard codes.isEmpty else { return }
        codes["stop"] = rig.replay.stop()
        codes["detach"] = rig.video.detach()
        codes["detachView"] = rig.video.detachView()
        codes["dispose"] = rig.replay.dispose()
        codes["shutdown"] = TiCloudStorage.shutdown()
        codes["pause"] = rig.replay.pause()
        codes["resume"] = rig.replay.resume()
        codes["speed"] = rig.replay.setSpeed(.x2)
        codes["volume"] = rig.audio.setVolume(50)
        codes["otherStop"] = other.replay.stop()
        codes["otherDetach"] = other.audio.detach()
      }
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(200))
      #expect(codes["stop"] == inUse)
      #expect(codes["detach"] == inUse)
      #expect(codes["detachView"] == inUse)
      #expect(codes["dispose"] == inUse)
      #expect(codes["shutdown"] == inUse)
      #expect(codes["pause"] == ok)
      #expect(codes["resume"] == ok)
      #expect(codes["speed"] == ok)
      #expect(codes["volume"] == ok)
      #expect(codes["otherStop"] == ok)
      #expect(codes["otherDetach"] == ok)
      // Nothing changed for the refused calls.
      #expect(rig.replay.currentTimeMs != nil)
      #expect(rig.video.state == .rendering)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(other.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func L27_L28_backgroundCallbacksShareOneSerialQueueAndDelegatesStayOnMain() async throws {
      let session = try SDKSession()
      let first = ReplayRig(callbackThread: .background)
      let second = ReplayRig(callbackThread: .background)
      // The shared queue is marked: a callback that runs on any other queue (one of its own) is seen.
      let sharedQueue = DispatchSpecificKey<Bool>()
      Runtime.shared.background.setSpecific(key: sharedQueue, value: true)
      defer { Runtime.shared.background.setSpecific(key: sharedQueue, value: nil) }
      let running = Locked(0)
      let overlapped = Locked(false)
      /// Each callback: from whom, on the main queue, on the shared queue.
      let calls = Locked<[(String, Bool, Bool)]>([])
      let callback = { @Sendable (from: String) in
        let now = running.withLock {
          $0 += 1; return $0
        }
        if now > 1 { overlapped.withLock { $0 = true } }
        calls.withLock { $0.append((from, onMainQueue, DispatchQueue.getSpecific(key: sharedQueue) == true)) }
        usleep(200)
        running.withLock { $0 -= 1 }
      }
      for (name, rig) in [("first", first), ("second", second)] {
        rig.replay.onTimeChanged = { _ in callback(name) }
      }
      // An ExportTask that chose the background queue shares it with the Replays.
      let exported = Locked(false)
      let export = first.storage.exportRecording(
        TiCloudStorageExportRequest(
          startTimeMs: recordingStart, endTimeMs: recordingStart + 9000, videoChannelId: 0, audioChannelId: 1),
        progress: { _ in callback("export") }, progressDetail: { _ in callback("export") },
        onRecordingGap: { _ in callback("export") }, callbackThread: .background,
        completion: { _ in
          callback("export")
          exported.withLock { $0 = true }
        })
      #expect(export.code == ok)
      #expect(first.play() == ok)
      #expect(second.play() == ok)
      await session.run(for: .seconds(2))
      try await session.run(until: "the background export's completion") {
        Runtime.shared.background.sync {}
        return exported.withLock { $0 }
      }
      // Wait for the background queue to run what was queued.
      Runtime.shared.background.sync {}
      #expect(!overlapped.withLock { $0 })
      let delivered = calls.withLock { $0 }
      for name in ["first", "second", "export"] {
        #expect(delivered.count { $0.0 == name } > 2, "\(name): \(delivered.count { $0.0 == name }) callbacks")
      }
      #expect(delivered.allSatisfy { !$0.1 && $0.2 }, "a background callback off the shared queue")
      // The Outputs' delegates ran on the main queue.
      #expect(first.log.videoStates.contains(.rendering))
      #expect(first.log.delegatesOnMain)
      #expect(first.tearDown().allSatisfy { $0 == ok })
      #expect(second.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func L28_completionFormsComeOnTheMainQueueFromABackgroundReplay() async throws {
      let session = try SDKSession()
      let rig = ReplayRig(callbackThread: .background)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(500))
      /// Each completion form's code and whether it ran on the main queue.
      var delivered: [String: (Int32, Bool)] = [:]
      var snapshot: TiCloudStorageSnapshotFile?
      rig.video.takeSnapshot { result in
        delivered["snapshot"] = (result.code, onMainQueue)
        snapshot = result.file
      }
      await session.drainMain { delivered["snapshot"] != nil }
      rig.replay.startRawDump(options: TiCloudStorageRawDumpOptions(videoChannelIds: [0])) { result in
        delivered["dump start"] = (result.code, onMainQueue)
        result.dump?.stop { delivered["dump stop"] = ($0.code, onMainQueue) }
      }
      let recording = try #require(rig.replay.startRecording(videoChannelId: 0).task)
      await session.run(for: .seconds(2))  // past the keyframe at 2 s it starts with
      recording.stop { delivered["recording stop"] = ($0.code, onMainQueue) }
      try await session.run(until: "the recording's and the dump's results") {
        delivered["recording stop"] != nil && delivered["dump stop"] != nil
      }
      try #require(snapshot).delete { delivered["delete"] = ($0, onMainQueue) }
      await session.drainMain { delivered["delete"] != nil }
      #expect(delivered.keys.sorted() == ["delete", "dump start", "dump stop", "recording stop", "snapshot"])
      for (form, (code, onMain)) in delivered {
        #expect(code == ok && onMain, "\(form): code \(code), on the main queue: \(onMain)")
      }
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func L30_L31_L32_L33_L35_disposeIsCheckedRetryableAndFinal() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.replay.setSpeed(.x4) == ok)
      #expect(rig.play() == ok)
      await session.run(for: .milliseconds(500))
      // In use: nothing changes.
      #expect(rig.replay.dispose() == inUse)
      #expect(rig.video.dispose() == inUse)
      #expect(rig.storage.dispose() == inUse)
      #expect(rig.video.state == .rendering)
      #expect(rig.replay.stop() == ok)
      #expect(rig.replay.dispose() == inUse)  // Outputs still bound
      #expect(rig.video.detach() == ok)
      #expect(rig.audio.detach() == ok)
      #expect(rig.video.dispose() == inUse)  // its view is still bound
      #expect(rig.video.detachView() == ok)
      let entriesBefore = rig.log.entries.count
      #expect(rig.video.dispose() == ok)
      #expect(rig.video.dispose() == ok)
      #expect(rig.audio.dispose() == ok)
      #expect(rig.replay.dispose() == ok)
      #expect(rig.replay.dispose() == ok)
      // After dispose: notInitialized, getters keep their values, no callbacks.
      #expect(rig.replay.play(startTimeMs: recordingStart, endTimeMs: recordingStart + 10) == notInitialized)
      #expect(rig.replay.speed == .x4)
      #expect(rig.video.attach(replay: rig.replay, channelId: 0) == notInitialized)
      #expect(rig.video.state == .idle)
      await session.run(for: .seconds(1))
      #expect(rig.log.entries.count == entriesBefore)
      #expect(rig.storage.dispose() == ok)
      #expect(
        try await session.pump {
          await rig.storage.listRecordings(startTimeMs: recordingStart, endTimeMs: recordingStart + 10)
        }.code == notInitialized)
      #expect(session.close() == ok)
    }

    @Test func L36_L37_C1_errorNamesAreStableDistinctAndNeedNoInitialize() {
      let codes: [Int32] = [
        0, 6000, 6001, 6014, 6022, 6024, 6026, 6027, 6029, 6030, 6043, 6044, 6045, 6046, 6113, 6114, 6115, 6117, 6118,
        6119, 6120, 6122, 6123, 6124, 6130, 6134, 6135, 6136, 6137,
      ]
      let names = codes.map(TiCloudStorage.errorToString)
      #expect(Set(names).count == codes.count)
      #expect(codes.map(TiCloudStorage.errorToString) == names)
      #expect(TiCloudStorage.errorToString(6026) == "inUse")
      #expect(TiCloudStorage.errorToString(6044) == "workDirectoryUnavailable")
      #expect(TiCloudStorage.errorToString(4242).contains("4242"))
      // C1: every named constant equals the number rules.md lists (C2–C30); 6044, 6045 and 6130 have none
      // and are returned as their numbers (the C13, C14 and O40 tests produce them).
      typealias Code = TiCloudStorageErrorCode
      let table: [(Int32, Int32)] = [
        (Code.ok, 0), (Code.invalidArgument, 6000), (Code.notInitialized, 6001), (Code.tokenExpired, 6014),
        (Code.alreadyInitialized, 6022), (Code.permissionDenied, 6024), (Code.inUse, 6026), (Code.notStarted, 6027),
        (Code.notBound, 6029), (Code.notConfigured, 6030), (Code.resourceExhausted, 6043),
        (Code.fileWriteFailed, 6046), (Code.unsupportedFormat, 6113), (Code.ioFailed, 6114), (Code.cancelled, 6115),
        (Code.rangeTooLarge, 6117), (Code.noFrame, 6118), (Code.noRecordableMedia, 6119),
        (Code.recordingOverrun, 6120), (Code.recordingUnreadable, 6122), (Code.cloudStorageUnavailable, 6123),
        (Code.stopped, 6124), (Code.recordingNotFound, 6134), (Code.recordingDownloadFailed, 6135),
        (Code.networkUnavailable, 6136), (Code.endpointDnsResolutionFailed, 6137),
      ]
      for (constant, number) in table { #expect(constant == number) }
      #expect(Set(table.map(\.1)).union([6044, 6045, 6130]) == Set(codes))
    }

    @Test func L38_theDocumentedTeardownSucceedsAtEveryStep() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      #expect(rig.play() == ok)
      await session.run(for: .seconds(1))
      #expect(rig.tearDown() == Array(repeating: ok, count: 8))
      #expect(session.close() == ok)
    }

    // MARK: A sibling service (the live SDK's place in the shared runtime)

    private var runtimeLog: RuntimeLog? { Runtime.shared.withLock { Runtime.shared.log } }

    private func logText(_ cache: TemporaryDirectory) throws -> String {
      try String(contentsOf: cache.url.appendingPathComponent("logs/cloudstorage.log"), encoding: .utf8)
    }

    @Test func L17_aSiblingWithItsOwnAppIdAndEndpointSharesTheRuntimeWithoutARestart() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let cache = try TemporaryDirectory("tipipe-sdk-sibling")
      let runtime = Runtime.shared
      #expect(
        runtime.initializeSibling(
          "tirtc", appId: "live-app", endpoint: "https://live.example", consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      let log = try #require(runtimeLog)
      #expect(
        TiCloudStorage.initialize(
          appId: "cloud-app", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      // One runtime: the same log, both services in it, the sibling as it was.
      #expect(runtimeLog === log)
      #expect(runtime.sibling("tirtc")?.appId == "live-app")
      let text = try logText(cache)
      let live = try #require(text.range(of: "tirtc initialized: appId live-app"))
      let cloud = try #require(text.range(of: "initialized: appId cloud-app"))
      #expect(live.lowerBound < cloud.lowerBound)
      #expect(TiCloudStorage.shutdown() == ok)
      runtime.shutdownSibling("tirtc")
      #expect(runtimeLog == nil)
    }

    @Test func L18_differentSharedSettingsAreAlreadyInitializedAndChangeNothing() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let cache = try TemporaryDirectory("tipipe-sdk-sibling")
      let other = try TemporaryDirectory("tipipe-sdk-sibling-other")
      let runtime = Runtime.shared
      #expect(
        runtime.initializeSibling(
          "tirtc", appId: "live-app", endpoint: "https://live.example", consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      let before = runtime.sibling("tirtc")
      // Another console setting or another work root than the running runtime's.
      for (console, root) in [(true, cache.url.path), (false, other.url.path)] {
        #expect(
          TiCloudStorage.initialize(
            appId: "cloud-app", endpoint: "", consoleLogEnabled: console, cacheDirectory: root)
            == TiCloudStorageErrorCode.alreadyInitialized)
      }
      #expect(runtime.sibling("tirtc") == before)
      #expect(TiCloudStorage(token: "t").createReplay().play(startTimeMs: 0, endTimeMs: 1) == notInitialized)
      // The other way round: TiCloudStorage runs, a sibling with other shared settings is refused.
      runtime.shutdownSibling("tirtc")
      #expect(
        TiCloudStorage.initialize(
          appId: "cloud-app", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      #expect(
        runtime.initializeSibling(
          "tirtc", appId: "live-app", endpoint: "", consoleLogEnabled: false, cacheDirectory: other.url.path)
          == TiCloudStorageErrorCode.alreadyInitialized)
      #expect(runtime.sibling("tirtc") == nil)
      #expect(Runtime.shared.workRoot?.standardizedFileURL.path == cache.url.standardizedFileURL.path)
      #expect(TiCloudStorage.shutdown() == ok)
    }

    @Test func L19_shutdownLeavesASiblingRunning() throws {
      TiCloudStorage.configureForTesting(replayEnvironment: nil, service: nil)
      let cache = try TemporaryDirectory("tipipe-sdk-sibling")
      let runtime = Runtime.shared
      #expect(
        TiCloudStorage.initialize(
          appId: "cloud-app", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      #expect(
        runtime.initializeSibling(
          "tirtc", appId: "live-app", endpoint: "https://live.example", consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      let log = try #require(runtimeLog)
      #expect(TiCloudStorage.shutdown() == ok)
      // The sibling and the runtime's log go on; TiCloudStorage is shut down.
      #expect(runtime.sibling("tirtc") != nil)
      #expect(runtimeLog === log)
      log.write("tirtc still logging")
      #expect(try logText(cache).contains("tirtc still logging"))
      #expect(TiCloudStorage(token: "t").updateToken("u") == notInitialized)
      // TiCloudStorage can start again beside it.
      #expect(
        TiCloudStorage.initialize(
          appId: "cloud-app", endpoint: sharedLibrary.absoluteString, consoleLogEnabled: false,
          cacheDirectory: cache.url.path) == ok)
      #expect(runtimeLog === log)
      #expect(TiCloudStorage.shutdown() == ok)
      runtime.shutdownSibling("tirtc")
      #expect(runtimeLog == nil)
    }
  }
}
