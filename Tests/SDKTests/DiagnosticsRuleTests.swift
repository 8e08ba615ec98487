import CloudServer
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

private let ok = TiCloudStorageErrorCode.ok

/// The manifest of a dump folder, as JSON.
private func manifest(_ directory: String) throws -> [String: Any] {
  let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent("manifest.json"))
  return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// SHA-256 of a file by `sha256sum` (an independent judge of the manifest's field).
private func sha256sum(_ path: String) throws -> String {
  String(try run("/usr/bin/sha256sum", [path]).prefix(64))
}

extension SDKRules {
  /// Rules.md group X: raw dumps and log uploads.
  @Suite @MainActor struct Diagnostics {
    private func start(_ replay: TiCloudStorageReplay, audio: [Int] = [], video: [Int] = []) async
      -> TiRawDumpStartResult
    {
      await replay.startRawDump(options: TiCloudStorageRawDumpOptions(audioChannelIds: audio, videoChannelIds: video))
    }

    @Test func X1_X2_X3_startRawDumpChecksItsChannelLists() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let none = await start(rig.replay)
      #expect(none.code == TiCloudStorageErrorCode.notConfigured && none.dump == nil)
      for (audio, video) in [([256], [0]), ([], [-1]), ([0], [Int.max]), ([Int.min], [])] {
        let refused = await start(rig.replay, audio: audio, video: video)
        #expect(refused.code == TiCloudStorageErrorCode.invalidArgument && refused.dump == nil)
      }
      // Nothing was created by the refusals.
      #expect(RawDumpFolder.dumps(in: session.cache.url.appendingPathComponent("dumps")).isEmpty)
      let started = await start(rig.replay, audio: [255], video: [0])
      #expect(started.code == ok)
      let dump = try #require(started.dump)
      let stopped = await dump.stop()
      #expect(stopped.code == ok && stopped.files.isEmpty && stopped.stopReason == "stopped")
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      // After dispose: notInitialized and no dump.
      let late = await start(rig.replay, video: [0])
      #expect(late.code == TiCloudStorageErrorCode.notInitialized && late.dump == nil)
      #expect(session.close() == ok)
    }

    @Test func X4_X6_X7_aDumpCapturesWhatIsReadPerChannelWithIntegrityFields() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      // No play is needed to start one (X7); nothing is captured until media flows.
      let dump = try #require(await start(rig.replay, audio: [1, 7], video: [0]).dump)
      await session.run(for: .seconds(1))
      #expect(rig.play(0, 2000) == ok)
      await session.run(for: .seconds(3))
      let result = try await session.pump { await dump.stop() }
      #expect(result.code == ok && result.stopReason == "stopped")
      // Channel 7 carried nothing: no file for it.
      #expect(
        result.files.map { URL(fileURLWithPath: $0.path).lastPathComponent }.sorted() == [
          "audio-1.aac", "video-0.h264",
        ])
      let video = try #require(result.files.first { $0.isVideo })
      let audio = try #require(result.files.first { !$0.isVideo })
      #expect(video.channelId == 0 && video.codec == "h264" && audio.channelId == 1 && audio.codec == "aac")
      // 2 s at 25 fps read from the start: every frame, and ffprobe reads the raw stream.
      #expect(video.packetCount == 50)
      #expect(video.firstTimeMs == recordingStart && video.lastTimeMs == recordingStart + 1960)
      let frames = try run(
        "/usr/bin/ffprobe",
        [
          "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames,codec_name", "-of", "csv=p=0",
          video.path,
        ])
      #expect(frames.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,50")
      let audioProbe = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "stream=codec_name,sample_rate", "-of", "csv=p=0", audio.path])
      #expect(audioProbe.trimmingCharacters(in: .whitespacesAndNewlines) == "aac,16000")
      // Integrity fields: sizes and digests match the files, in the result and in the manifest.
      let fields = try manifest(result.directoryPath)
      #expect(fields["stop_reason"] as? String == "stopped")
      #expect(fields["max_bytes"] as? Int == 1 << 30 && fields["max_duration_ms"] as? Int == 300_000)
      let listed = try #require(fields["files"] as? [[String: Any]])
      #expect(listed.count == 2)
      for file in result.files {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.size] as? Int).map(Int64.init) == file.byteCount)
        #expect(try sha256sum(file.path) == file.sha256)
        let entry = try #require(
          listed.first { $0["name"] as? String == URL(fileURLWithPath: file.path).lastPathComponent })
        #expect(entry["sha256"] as? String == file.sha256 && entry["packets"] as? Int == file.packetCount)
        // The index has one line per packet, offsets adding up to the file's size.
        let index = try String(contentsOfFile: file.path + ".index.csv", encoding: .utf8)
          .split(separator: "\n").dropFirst().map { $0.split(separator: ",") }
        #expect(index.count == file.packetCount)
        #expect(index.reduce(Int64(0)) { $0 + Int64($1[2])! } == file.byteCount)
      }
      // Every stop gets the same result.
      let again = await dump.stop()
      #expect(again.files == result.files && again.directoryPath == result.directoryPath)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func X6_R77_oneDumpAtATimeEndsByItselfAfterFiveMinutesAndHoldsItsReplay() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      let other = ReplayRig()
      let dump = try #require(await start(rig.replay, video: [0]).dump)
      // A second one, on this Replay or another, is inUse while the first captures.
      #expect(await start(rig.replay, video: [0]).code == TiCloudStorageErrorCode.inUse)
      #expect(await start(other.replay, audio: [1]).code == TiCloudStorageErrorCode.inUse)
      #expect(rig.play(0, 9000) == ok)
      await session.run(for: .seconds(299))
      #expect(await start(other.replay, audio: [1]).code == TiCloudStorageErrorCode.inUse)
      await session.run(for: .seconds(2))
      // Ended by itself at 5 minutes of the replay's clock; the next dump may start.
      let ended = try await session.pump { await dump.stop() }
      #expect(ended.code == ok && ended.stopReason == "durationLimit")
      #expect(ended.files.first?.packetCount == 200)  // all 9 s at 25 fps but the 1 s hole: everything read
      let next = await start(other.replay, audio: [1])
      #expect(next.code == ok)
      // An active dump keeps its Replay from being disposed until it is stopped (R77).
      let teardown = other.tearDown()
      #expect(
        teardown.dropLast(2).allSatisfy { $0 == ok }
          && teardown.suffix(2) == [TiCloudStorageErrorCode.inUse, TiCloudStorageErrorCode.inUse])
      let stopped = try await session.pump { await next.dump!.stop() }
      #expect(stopped.stopReason == "stopped")
      #expect(RawDumpFolder.isComplete(URL(fileURLWithPath: stopped.directoryPath)))
      #expect(other.replay.dispose() == ok && other.storage.dispose() == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }

    @Test func X5_rawDumpCompletionsRunOnceOnTheMainQueue() async throws {
      let session = try SDKSession()
      let rig = ReplayRig()
      var starts: [(TiRawDumpStartResult, Bool)] = []
      rig.replay.startRawDump(options: TiCloudStorageRawDumpOptions(videoChannelIds: [0])) {
        starts.append(($0, onMainQueue))
      }
      await session.drainMain { !starts.isEmpty }
      #expect(starts.count == 1 && starts[0].1 && starts[0].0.code == ok)
      var stops: [(TiRawDumpStopResult, Bool)] = []
      starts[0].0.dump?.stop { stops.append(($0, onMainQueue)) }
      await session.drainMain { !stops.isEmpty }
      #expect(stops.count == 1 && stops[0].1 && stops[0].0.code == ok)
      #expect(rig.tearDown().allSatisfy { $0 == ok })
      #expect(session.close() == ok)
    }
  }
}

/// The names in a `.tar.gz`, by GNU tar (an independent reader).
private func entries(_ archive: URL) throws -> [String] {
  try run("/usr/bin/tar", ["-tzf", archive.path]).split(separator: "\n").map(String.init).sorted()
}

/// One file of a `.tar.gz`, by GNU tar.
private func extract(_ name: String, from archive: URL) throws -> Data {
  try runForData("/usr/bin/tar", ["-xzOf", archive.path, name])
}

extension SDKRules.Diagnostics {
  /// Starts an upload: its code, and what its completion delivered (and whether on the main queue).
  @MainActor final class Upload {
    let code: Int32
    private let box: Box

    init() {
      let box = Box()
      self.box = box
      code = TiRtcLogging.upload { box.results.append(($0, onMainQueue)) }
    }

    @MainActor final class Box {
      var results: [(result: TiRtcLogUploadResult, onMain: Bool)] = []
    }

    var delivered: [(result: TiRtcLogUploadResult, onMain: Bool)] { box.results }

    /// Waits for the completion (the packaging and the network run on threads of their own).
    func wait() async throws -> TiRtcLogUploadResult {
      let deadline = ContinuousClock.now + testDeadline
      while box.results.isEmpty {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut("a log upload's result") }
        await Task.yield()
      }
      return box.results[0].result
    }
  }

  /// Where a `file://` endpoint's upload went.
  private func uploaded(_ logId: String?, library: URL = sharedLibrary) throws -> URL {
    let id = try #require(logId)
    let url = library.appendingPathComponent("uploads/\(id).tar.gz")
    #expect(FileManager.default.fileExists(atPath: url.path))
    return url
  }

  @Test func X8_X10_X13_anUploadStartsAndItsOutcomeComesOnceOnTheMainQueue() async throws {
    let session = try SDKSession()
    let upload = Upload()
    #expect(upload.code == ok)
    let result = try await upload.wait()
    for _ in 0..<3 { await session.drainMain() }
    #expect(upload.delivered.count == 1 && upload.delivered[0].onMain)
    #expect(result.code == ok && result.succeeded)
    let archive = try uploaded(result.logId)
    #expect(try entries(archive) == ["logs/cloudstorage.log", "manifest.json"])
    let log = String(decoding: try extract("logs/cloudstorage.log", from: archive), as: UTF8.self)
    #expect(log.contains("initialized: appId test-app") && log.contains("log upload started"))
    #expect(session.close() == ok)
  }

  @Test func X8_zeroMeansStartedAndAFailureComesThroughTheCompletion() async throws {
    let session = try SDKSession()
    // Where the package is made is a file: the upload cannot be packaged (ioFailed, C17).
    #expect(
      FileManager.default.createFile(
        atPath: session.cache.url.appendingPathComponent("upload").path, contents: Data("x".utf8)))
    let upload = Upload()
    #expect(upload.code == ok)
    #expect(upload.delivered.isEmpty, "the outcome came inside the call")
    let result = try await upload.wait()
    for _ in 0..<3 { await session.drainMain() }
    #expect(upload.delivered.count == 1 && upload.delivered[0].onMain)
    #expect(result.code == TiCloudStorageErrorCode.ioFailed && !result.succeeded && result.logId == nil)
    #expect(session.close() == ok)
  }

  @Test func X8_X9_X10_anAwaitedUploadReturnsItsOutcomeAndARefusalAtOnce() async throws {
    #expect(TiCloudStorage.shutdown() == ok)
    #expect(await TiRtcLogging.upload().code == TiCloudStorageErrorCode.notInitialized)
    let session = try SDKSession()
    let result = await TiRtcLogging.upload()
    #expect(result.code == ok && result.succeeded)
    _ = try uploaded(result.logId)
    // The upload counts as running until its outcome was handed over: shutdown is free again.
    #expect(session.close() == ok)
  }

  @Test func X9_X11_X12_refusedUploadsNeverCompleteAndShutdownWaitsForOne() async throws {
    // Not initialized: notInitialized at once, no completion.
    #expect(TiCloudStorage.shutdown() == ok)
    let early = Upload()
    #expect(early.code == TiCloudStorageErrorCode.notInitialized)
    let session = try SDKSession()
    let first = Upload()
    let second = Upload()
    #expect(first.code == ok && second.code == TiCloudStorageErrorCode.inUse)
    // shutdown waits for the completion to have been delivered (X12).
    #expect(TiCloudStorage.shutdown() == TiCloudStorageErrorCode.inUse)
    _ = try await first.wait()
    for _ in 0..<3 { await session.drainMain() }
    #expect(early.delivered.isEmpty && second.delivered.isEmpty && first.delivered.count == 1)
    #expect(session.close() == ok)
    // After shutdown: notInitialized again.
    #expect(Upload().code == TiCloudStorageErrorCode.notInitialized)
  }

  @Test func X14_X15_X16_aCompletedDumpGoesWithTheNextUploadOnlyAndNoSecretIsInTheLogs() async throws {
    let session = try SDKSession()
    let rig = ReplayRig()
    let dump = try #require(await start(rig.replay, audio: [1], video: [0]).dump)
    #expect(rig.play(0, 2000) == ok)
    await session.run(for: .seconds(1))
    // While the dump runs, an upload has no raw media (X14).
    let during = try uploaded(await Upload().wait().logId)
    #expect(!(try entries(during)).contains { $0.hasPrefix("dumps/") })
    let stopped = try await session.pump { await dump.stop() }
    let folder = URL(fileURLWithPath: stopped.directoryPath).lastPathComponent
    // The next upload has the dump, its manifest and indexes (X15) …
    let next = try uploaded(await Upload().wait().logId)
    let names = try entries(next)
    for expected in ["manifest.json", "video-0.h264", "video-0.h264.index.csv", "audio-1.aac", "audio-1.aac.index.csv"]
    {
      #expect(names.contains("dumps/\(folder)/\(expected)"), "\(expected) in \(names)")
    }
    let video = try #require(stopped.files.first { $0.isVideo })
    let packaged = try extract("dumps/\(folder)/video-0.h264", from: next)
    #expect(packaged == (try Data(contentsOf: URL(fileURLWithPath: video.path))))
    let manifest = try #require(
      try JSONSerialization.jsonObject(with: try extract("manifest.json", from: next)) as? [String: Any])
    #expect(manifest["raw_dumps"] as? [String] == [folder])
    // … and the one after it does not (X16).
    let later = try uploaded(await Upload().wait().logId)
    #expect(!(try entries(later)).contains { $0.hasPrefix("dumps/") })
    // No token reached a log.
    let log = try extract("logs/cloudstorage.log", from: later)
    #expect(!String(decoding: log, as: UTF8.self).contains("device-token"))
    #expect(rig.tearDown().allSatisfy { $0 == ok })
    #expect(session.close() == ok)
  }

  @Test func X10_anUploadToTheReferenceServerGetsItsLogIdAndAFailedOneSaysWhy() async throws {
    var configuration = ServerConfiguration(root: sharedLibrary, secret: "s")
    configuration.port = 0
    let server = try ReferenceServer(configuration)
    let session = try SDKSession(endpoint: server.endpoint)
    // The upload route takes a device token: the one of the instance made last.
    let device = try RecordingIndex.load(library: sharedLibrary).deviceId
    let storage = TiCloudStorage(
      token: CloudToken(deviceId: device, expires: Int64(Date().timeIntervalSince1970) + 3600).signed(secret: "s"))
    let result = try await Upload().wait()
    #expect(result.succeeded && result.logId?.hasPrefix("log-") == true)
    let archive = try uploaded(result.logId)
    #expect(try entries(archive).contains("logs/cloudstorage.log"))
    // Nothing listens any more: the service is down (the host refuses), no log id.
    server.stop()
    let failed = try await Upload().wait()
    #expect(failed.code == TiErrorCode.cloudStorageUnavailable.rawValue && failed.logId == nil && !failed.succeeded)
    #expect(storage.dispose() == ok)
    #expect(session.close() == ok)
  }

  @Test func endpointsReachTheLogWithoutCredentialsOrQueries() {
    #expect(Runtime.redacted("http://user:secret@host:8080/base?sig=abc&expires=1") == "http://host:8080/base")
    #expect(Runtime.redacted("https://cloud.example/v1?token=t") == "https://cloud.example/v1")
    #expect(Runtime.redacted("file:///var/lib/library/") == "file:///var/lib/library/")
  }
}
