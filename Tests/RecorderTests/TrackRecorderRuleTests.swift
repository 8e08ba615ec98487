import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TrackRecording

/// The recorder suites that set process-wide settings (the data root, the thresholds, the free-space
/// source: global, as the seed's are) run one after another.
@Suite(.serialized) enum RecorderSettingsTests {}

/// Seed 003's rules of the TrackRecorder (`docs/track-recorder-rules.md`), each through the public API,
/// each file judged by ffprobe/ffmpeg. Serialized: the data root, the thresholds and the free-space
/// source are process-wide, as the seed's settings are.
extension RecorderSettingsTests {
  @MainActor
  @Suite(.serialized) final class TrackRecorderRuleTests {
    let directory: TemporaryDirectory

    init() throws {
      directory = try TemporaryDirectory("recorder")
      TrackRecorder.dataRoot = directory.url.appendingPathComponent("data")
      TrackRecorder.setFreeSpaceSource(nil)
      TrackRecorder.diskSpaceWarningThreshold = 100 << 20
      TrackRecorder.diskSpaceCriticalThreshold = 50 << 20
    }

    deinit {
      TrackRecorder.setFreeSpaceSource(nil)
    }

    /// Records the file at `url` whole through a recorder of its tracks.
    private func record(
      _ url: URL, name: String, video: Bool = true, audio: Bool = true, fps: Int = 20, size: VideoSize = .hd720
    ) async throws -> (RecordingFileInfo, TrackRecorder) {
      let tracks = try FileTracks(path: url.path, video: video, audio: audio)
      let recorder = TrackRecorder(videoTrack: tracks.video, audioTrack: tracks.audio, videoFps: fps, videoSize: size)
      try recorder.startRecording(fileName: name)
      try tracks.start()
      // A recorder whose tracks all end stops by itself, and the file arrives through lastFinishedFile.
      try await recorder.wait(until: .idle)
      #expect(tracks.failure == nil)
      return (try #require(recorder.lastFinishedFile), recorder)
    }

    @Test func RC3_RC5_RC6_RC9_aPictureOfAnotherSizeIsFittedInsideWithBlackBars() async throws {
      let source = try RecorderFixtures.mediaFile(in: directory.url, seconds: 4, width: 640, height: 480)
      let (info, _) = try await record(source, name: "fitted")
      let streams = try RecorderFixtures.streams(of: info.url)
      #expect(streams.map(\.codec) == ["h264", "aac"])
      let video = try #require(streams.first)
      // Defaults: 1280×720 at a constant 20 fps (4 s of 30 fps pictures give 80).
      #expect(video.width == 1280 && video.height == 720)
      #expect(video.averageRate == "20/1")
      #expect(video.frames == 80)
      #expect(abs((streams[1].duration ?? 0) - 4) < 0.05)
      // 4:3 inside 16:9: 960×720 in the middle, 160 black columns each side (limited-range black, 16).
      let picture = try RecorderFixtures.luma(of: info.url, picture: 40)
      #expect(picture.count == 1280 * 720)
      var bars: [UInt8] = []
      var inside: [UInt8] = []
      for row in 0..<720 {
        let line = picture[(row * 1280)..<(row * 1280 + 1280)]
        bars += line.prefix(156) + line.suffix(156)
        inside += line.dropFirst(160).prefix(960)
      }
      #expect(bars.allSatisfy { $0 <= 20 }, "the bars are black")
      // Picture 40 is at 2.000 s: the source's picture there, scaled by ffmpeg to the same 960×720.
      let reference = try RecorderFixtures.scaledLuma(of: source, at: 2.0, width: 960, height: 720)
      let psnr = RecorderFixtures.psnr(inside, reference)
      #expect(psnr >= 30, "inside the bars: \(psnr) dB against ffmpeg's scaling of the source")
    }

    @Test func RC3_videoOnlyAudioOnlyAndNoTrack() async throws {
      let source = try RecorderFixtures.mediaFile(in: directory.url, seconds: 2)
      let (pictures, _) = try await record(source, name: "pictures", audio: false)
      #expect(try RecorderFixtures.streams(of: pictures.url).map(\.codec) == ["h264"])
      let (sound, _) = try await record(source, name: "sound", video: false)
      let soundStreams = try RecorderFixtures.streams(of: sound.url)
      #expect(soundStreams.map(\.codec) == ["aac"])
      #expect(soundStreams.first?.sampleRate == 44_100 && soundStreams.first?.channels == 1)
      let none = TrackRecorder()
      #expect(throws: NSError.self) { try none.startRecording(fileName: "nothing") }
      do { try none.startRecording(fileName: "nothing") } catch let error as NSError {
        #expect(error.domain == "RecordingEngine" && error.code == -3)
      }
      #expect(none.state == .idle)
      #expect(
        !FileManager.default.fileExists(
          atPath: TrackRecorder.recordingsDirectory.appendingPathComponent("nothing.mp4").path))
    }

    @Test func RC3_aRecorderThatCannotStartLeavesItsTrackFree() throws {
      // A rate or a size the encoder refuses: −3, no file, and no subscription left behind to fill up
      // (the track's producers would be told to wait for room forever).
      let track = MediaTrack(id: TrackID(.video, channel: 0))
      for (index, (fps, size)) in [(0, VideoSize.hd720), (20, VideoSize(width: 7, height: 5))].enumerated() {
        let recorder = TrackRecorder(videoTrack: track, videoFps: fps, videoSize: size)
        do {
          try recorder.startRecording(fileName: "refused-\(index)")
          Issue.record("started at \(fps) fps, \(size)")
        } catch let error as NSError {
          #expect(error.domain == "RecordingEngine" && error.code == -3, "\(error)")
        }
        #expect(recorder.state == .idle)
        let file = TrackRecorder.recordingsDirectory.appendingPathComponent("refused-\(index).mp4")
        #expect(!FileManager.default.fileExists(atPath: file.path))
      }
      let picture = try CompositorTests.picture(50, at: 0, track: track.id)
      #expect((0..<200).allSatisfy { _ in track.push(picture) }, "a producer is never told to wait")
    }

    @Test func RC25_RC44_tracksThatCarryNoFrameRecordNothingAndAreNoError() async throws {
      let track = MediaTrack(id: TrackID(.video, channel: 0))
      let recorder = TrackRecorder(videoTrack: track, videoSize: VideoSize(width: 320, height: 240))
      try recorder.startRecording(fileName: "empty")
      track.end()
      try await recorder.wait(until: .idle)
      #expect(recorder.lastFinishedFile == nil && recorder.lastError == nil)
      let file = TrackRecorder.recordingsDirectory.appendingPathComponent("empty.mp4")
      #expect(!FileManager.default.fileExists(atPath: file.path), "the name is not kept")
    }

    @Test func RC11_RC12_RC13_RC35_theNameGetsMP4AndAnExistingFileIsNeverReplaced() async throws {
      let source = try RecorderFixtures.mediaFile(in: directory.url, seconds: 1)
      let (info, _) = try await record(source, name: "meeting.mp4")
      #expect(info.url.lastPathComponent == "meeting.mp4.mp4")
      #expect(info.id == "meeting.mp4")
      #expect(
        info.url.deletingLastPathComponent().standardizedFileURL
          == TrackRecorder.recordingsDirectory.standardizedFileURL)
      let before = try Data(contentsOf: info.url)
      let tracks = try FileTracks(path: source.path)
      let again = TrackRecorder(videoTrack: tracks.video, audioTrack: tracks.audio)
      do {
        try again.startRecording(fileName: "meeting.mp4")
        Issue.record("a second recording of the same name started")
      } catch let error as NSError {
        #expect(error.domain == "RecordingEngine" && error.code == -2)
      }
      #expect(again.state == .idle)
      #expect(try Data(contentsOf: info.url) == before, "the existing file is untouched")
      // A name that would leave the folder is not a file name: −3, nothing written anywhere.
      for name in ["../escape", "a/b", "", ".."] {
        do {
          try again.startRecording(fileName: name)
          Issue.record("\(name) started")
        } catch let error as NSError {
          #expect(error.domain == "RecordingEngine" && error.code == -3, "\(name)")
        }
      }
      #expect(!FileManager.default.fileExists(atPath: TrackRecorder.dataRoot.appendingPathComponent("escape.mp4").path))
    }

    @Test func RC14_RC18_RC26_aPauseIsLeftOutNotRecordedAsBlackOrSilence() async throws {
      let tracks = FedTracks()
      let recorder = TrackRecorder(
        videoTrack: tracks.video, audioTrack: tracks.audio, videoSize: VideoSize(width: 320, height: 240))
      try recorder.startRecording(fileName: "paused")
      try await tracks.feed(until: 3)
      recorder.pauseRecording()
      #expect(recorder.state == .paused && !recorder.isRecording)
      try await tracks.feed(until: 5)
      recorder.resumeRecording()
      #expect(recorder.state == .recording && recorder.isRecording)
      try await tracks.feed(until: 8)
      let info = try #require(try await recorder.stopAndWait())
      // 8 s of source, 2 s paused: 6 s in the file, picture and sound alike.
      #expect(abs(info.duration - 6) < 0.06, "\(info.duration)")
      let streams = try RecorderFixtures.streams(of: info.url)
      #expect(streams.first?.frames == 120)
      #expect(abs((streams.last?.duration ?? 0) - 6) < 0.06)
      // At 3.5 s the file shows source second 5 (seconds 3 and 4 were paused), not black.
      let picture = try RecorderFixtures.luma(of: info.url, picture: 70)
      let mean = Double(picture.reduce(0) { $0 + Int($1) }) / Double(picture.count)
      #expect(abs(mean - RecorderFixtures.fullRange(FedTracks.value(ofSecond: 5))) < 3, "mean luma \(mean)")
      let before = try RecorderFixtures.luma(of: info.url, picture: 50)
      let meanBefore = Double(before.reduce(0) { $0 + Int($1) }) / Double(before.count)
      #expect(abs(meanBefore - RecorderFixtures.fullRange(FedTracks.value(ofSecond: 2))) < 3, "mean luma \(meanBefore)")
    }

    @Test func RC15_RC16_RC17_RC19_RC22_RC23_RC34_statesAndTheCompletion() async throws {
      let tracks = FedTracks()
      let recorder = TrackRecorder(
        videoTrack: tracks.video, audioTrack: tracks.audio, videoSize: VideoSize(width: 320, height: 240))
      #expect(recorder.state == .idle && !recorder.isRecording)
      var seen: [RecorderState] = []
      let stream = recorder.changes
      let watcher = Task { @MainActor in
        for await state in stream {
          seen.append(state)
          if state == .idle { return }
        }
      }
      try recorder.startRecording(fileName: "states")
      #expect(recorder.state == .recording && recorder.isRecording)
      do {
        try recorder.startRecording(fileName: "other")
        Issue.record("started twice")
      } catch let error as NSError {
        #expect(error.domain == "RecordingEngine" && error.code == -1)
      }
      try await tracks.feed(until: 2)
      var completed: RecordingFileInfo??
      recorder.stopRecording { info in
        // On the main actor, with the file complete.
        MainActor.preconditionIsolated()
        completed = .some(info)
      }
      // stopRecording returns at once: finalizing until the file is complete, and no start meanwhile.
      #expect(recorder.state == .finalizing)
      #expect(completed == nil)
      do {
        try recorder.startRecording(fileName: "other")
        Issue.record("started while finalizing")
      } catch let error as NSError {
        #expect(error.code == -1)
      }
      try await recorder.wait(until: .idle)
      // The watcher's stream ends its loop at `.idle`: waited for with a deadline (a stream that lost it
      // fails the test instead of hanging it).
      let deadline = ContinuousClock.now + testDeadline
      while seen.last != .idle {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut("the watcher to see the recorder idle") }
        await Task.yield()
      }
      _ = await watcher.value
      let info = try #require(completed ?? nil)
      #expect(info == recorder.lastFinishedFile)
      #expect(abs(info.duration - 2) < 0.06)
      #expect(seen == [.recording, .finalizing, .idle])
      // Stopping with nothing recording completes with nil at once.
      var nothing: RecordingFileInfo?? = nil
      recorder.stopRecording { nothing = .some($0) }
      #expect(nothing == .some(nil))
    }

    @Test func RC21_RC27_RC29_RC30_RC31_RC33_diskSpace() async throws {
      let free = Locked<Int64>(40 << 20)
      TrackRecorder.setFreeSpaceSource { _ in free.withLock { $0 } }
      let tracks = FedTracks()
      let recorder = TrackRecorder(videoTrack: tracks.video, videoSize: VideoSize(width: 320, height: 240))
      do {
        try recorder.startRecording(fileName: "full")
        Issue.record("started below the critical threshold")
      } catch RecordingError.insufficientDiskSpace(let available, let required) {
        #expect(available == 40 << 20 && required == 50 << 20)
      }
      #expect(TrackRecorder.availableDiskSpace() == 40 << 20)
      // Between the thresholds: the recording starts, with a warning, and goes on.
      free.withLock { $0 = 80 << 20 }
      try recorder.startRecording(fileName: "low")
      #expect(recorder.diskSpaceWarning == .warning(available: 80 << 20, threshold: 100 << 20))
      try await tracks.feed(until: 1)
      recorder.checkDiskSpace()
      #expect(recorder.state == .recording)
      // Below the critical threshold: it stops by itself; the file arrives through lastFinishedFile.
      free.withLock { $0 = 10 << 20 }
      recorder.checkDiskSpace()
      #expect(recorder.diskSpaceWarning == .criticalStopped(available: 10 << 20, threshold: 50 << 20))
      #expect(recorder.state == .finalizing)
      try await recorder.wait(until: .idle)
      let file = try #require(recorder.lastFinishedFile)
      #expect(file.id == "low")
      #expect(abs(file.duration - 1) < 0.06)
      // The thresholds are global: lowering them lets every recorder start; a start clears the warning.
      TrackRecorder.diskSpaceCriticalThreshold = 5 << 20
      TrackRecorder.diskSpaceWarningThreshold = 6 << 20
      // Another recorder, made after the change, starts where the old thresholds refused.
      let other = TrackRecorder(videoTrack: tracks.video, videoSize: VideoSize(width: 320, height: 240))
      try other.startRecording(fileName: "other")
      #expect(other.state == .recording && other.diskSpaceWarning == nil)
      try recorder.startRecording(fileName: "again")
      #expect(recorder.diskSpaceWarning == nil && recorder.lastError == nil)
      _ = try await recorder.stopAndWait()
      _ = try await other.stopAndWait()
    }

    @Test func RC39_RC40_theFilesNewestFirstAndTheirDeletion() async throws {
      let source = try RecorderFixtures.mediaFile(in: directory.url, seconds: 1)
      for name in ["old", "middle", "new"] { _ = try await record(source, name: name, audio: false) }
      let folder = TrackRecorder.recordingsDirectory
      for (index, name) in ["old", "middle", "new"].enumerated() {
        var times = [
          timespec(tv_sec: 1_700_000_000 + index * 100, tv_nsec: 0),
          timespec(tv_sec: 1_700_000_000 + index * 100, tv_nsec: 0),
        ]
        #expect(utimensat(AT_FDCWD, folder.appendingPathComponent(name + ".mp4").path, &times, 0) == 0)
      }
      #expect(TrackRecorder.getRecordingList().map(\.id) == ["new", "middle", "old"])
      try TrackRecorder.deleteRecording(fileId: "middle")
      #expect(TrackRecorder.getRecordingList().map(\.id) == ["new", "old"])
      // Only a recording in the folder is deleted: a file elsewhere, a missing id, a directory are refused.
      let outside = directory.url.appendingPathComponent("keep.mp4")
      try Data("keep".utf8).write(to: outside)
      #expect(throws: (any Error).self) { try TrackRecorder.deleteRecording(at: outside) }
      #expect(throws: (any Error).self) { try TrackRecorder.deleteRecording(fileId: "missing") }
      #expect(throws: (any Error).self) { try TrackRecorder.deleteRecording(fileId: "../keep") }
      try FileManager.default.createDirectory(
        at: folder.appendingPathComponent("dir.mp4"), withIntermediateDirectories: true)
      #expect(throws: (any Error).self) { try TrackRecorder.deleteRecording(fileId: "dir") }
      #expect(FileManager.default.fileExists(atPath: outside.path))
      try TrackRecorder.deleteRecording(at: folder.appendingPathComponent("new.mp4"))
      try TrackRecorder.deleteAllRecordings()
      #expect(TrackRecorder.getRecordingList().isEmpty)
      #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("dir.mp4").path))
    }

    @Test func RC1_RC8_aReplayIsRecordedAsItPlays() async throws {
      // A replay of a synthetic library (manual executor, virtual clock), its video and audio outputs
      // drawing into tracks beside the harness's own outputs: one track, several takers.
      let harness = try ReplayHarness(seconds: 9, audio: true)
      let video = MediaTrack(id: TrackID(.video, channel: 0))
      let audio = MediaTrack(id: TrackID(.audio, channel: 1))
      harness.replay.bindVideo(channel: 0, renderer: video) { _ in }
      harness.replay.bindAudio(channel: 1, device: audio) { _ in }
      let recorder = TrackRecorder(videoTrack: video, audioTrack: audio, videoSize: VideoSize(width: 320, height: 240))
      try recorder.startRecording(fileName: "replayed")
      #expect(harness.play(1_000, 7_000) == .ok)
      // 6 s of play, 100 ms at a time, each step waiting for the recorder to take what was presented.
      for _ in 0..<62 {
        harness.run(for: .milliseconds(100))
        for track in [video, audio] {
          await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in track.whenRoom { done.resume() } }
        }
      }
      #expect(harness.renderer.frames.count >= 149)
      let info = try #require(try await recorder.stopAndWait())
      #expect(abs(info.duration - 6) < 0.1, "\(info.duration)")
      let streams = try RecorderFixtures.streams(of: info.url)
      #expect(streams.map(\.codec) == ["h264", "aac"])
      #expect(abs(Double(streams.first?.frames ?? 0) - 120) <= 2)
    }

    @Test func RC7_RC8_severalRecordersOfOneTrackEachWriteTheirOwnFile() async throws {
      let source = try RecorderFixtures.mediaFile(in: directory.url, seconds: 2)
      let tracks = try FileTracks(path: source.path)
      let recorders = [
        TrackRecorder(
          videoTrack: tracks.video, audioTrack: tracks.audio, videoSize: VideoSize(width: 640, height: 360)),
        TrackRecorder(
          videoTrack: tracks.video, audioTrack: tracks.audio, videoFps: 10,
          videoSize: VideoSize(width: 320, height: 240)),
        TrackRecorder(videoTrack: tracks.video, videoSize: VideoSize(width: 640, height: 360)),
      ]
      for (index, recorder) in recorders.enumerated() { try recorder.startRecording(fileName: "fan-\(index)") }
      try tracks.start()
      for recorder in recorders { try await recorder.wait(until: .idle) }
      let files = try recorders.map { try #require($0.lastFinishedFile) }
      #expect(Set(files.map(\.url)).count == 3)
      let streams = try files.map { try RecorderFixtures.streams(of: $0.url) }
      #expect(streams[0].map(\.codec) == ["h264", "aac"] && streams[0].first?.frames == 40)
      #expect(streams[1].first?.width == 320 && streams[1].first?.frames == 20)
      #expect(streams[2].map(\.codec) == ["h264"] && streams[2].first?.frames == 40)
    }
  }

}

/// The recorder on a real small filesystem: a 3 MB tmpfs the test mounts (it needs root and the right to
/// mount; without them the tests are skipped, and the report says so).
extension RecorderSettingsTests {
  @MainActor
  @Suite(.serialized) final class SmallFilesystemTests {
    /// Pictures of noise (seeded): they do not compress, so a few seconds fill megabytes.
    private static func noise(_ seed: Int) throws -> FrameBuffer {
      var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
      return try FrameBuffer.picture(width: 320, height: 240, format: .yuv420p) { _, base, stride, _, rows in
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        for index in 0..<(stride * rows) {
          state ^= state << 13
          state ^= state >> 7
          state ^= state << 17
          bytes[index] = UInt8(truncatingIfNeeded: state)
        }
      }
    }

    /// Mounts a tmpfs of `bytes` at a new directory; nil when this process may not mount.
    private nonisolated static func mountTmpfs(bytes: Int) throws -> URL? {
      let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "recorder-tmpfs-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      guard getuid() == 0, mount("tmpfs", directory.path, "tmpfs", 0, "size=\(bytes)") == 0 else {
        try? FileManager.default.removeItem(at: directory)
        return nil
      }
      return directory
    }

    private nonisolated static func unmount(_ directory: URL) {
      umount2(directory.path, Int32(MNT_DETACH))
      try? FileManager.default.removeItem(at: directory)
    }

    private func feedNoise(_ track: MediaTrack, from first: Int, count: Int) async throws {
      for index in first..<(first + count) {
        let frame = DecodedFrame(
          track: track.id, time: .microseconds(Int64(index) * 50_000), duration: .microseconds(50_000),
          frame: try Self.noise(index))
        if !track.push(frame) {
          await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in track.whenRoom { done.resume() } }
        }
      }
    }

    /// True when this process may mount a tmpfs (tried once).
    nonisolated static let canMount: Bool = {
      guard let mountPoint = try? mountTmpfs(bytes: 1 << 20) else { return false }
      unmount(mountPoint)
      return true
    }()

    @Test(.enabled(if: canMount, "needs root and the right to mount a tmpfs"))
    func RC30_RC32_theRealFreeSpaceStopsARecordingBelowTheCriticalThreshold() async throws {
      // The critical threshold far above what one fragment of noise writes at once (a 3 MB tmpfs with a
      // 1 MB threshold was once filled by one flush, under the address sanitizer: the write failed first,
      // which RC25 is about): the free space passes below it with room left.
      let mountPoint = try #require(try Self.mountTmpfs(bytes: 16 << 20))
      defer { Self.unmount(mountPoint) }
      TrackRecorder.dataRoot = mountPoint
      TrackRecorder.setFreeSpaceSource(nil)
      TrackRecorder.diskSpaceWarningThreshold = 12 << 20
      TrackRecorder.diskSpaceCriticalThreshold = 8 << 20
      defer {
        TrackRecorder.diskSpaceWarningThreshold = 100 << 20
        TrackRecorder.diskSpaceCriticalThreshold = 50 << 20
      }
      #expect(TrackRecorder.availableDiskSpace() == 16 << 20)
      let track = MediaTrack(id: TrackID(.video, channel: 0))
      let recorder = TrackRecorder(videoTrack: track, videoSize: VideoSize(width: 320, height: 240))
      try recorder.startRecording(fileName: "filling")
      #expect(recorder.diskSpaceWarning == nil)
      // Noise until the real free space is below the critical threshold (a condition, within the deadline).
      var fed = 0
      let deadline = ContinuousClock.now + testDeadline
      while TrackRecorder.availableDiskSpace() >= 8 << 20 {
        guard ContinuousClock.now < deadline, fed < 2000 else { throw WaitTimedOut("the tmpfs to fill") }
        try await feedNoise(track, from: fed, count: 2)
        fed += 2
        await Task.yield()
      }
      recorder.checkDiskSpace()
      guard case .criticalStopped(let available, let threshold) = recorder.diskSpaceWarning else {
        Issue.record(
          "no critical stop: \(String(describing: recorder.diskSpaceWarning)), error \(String(describing: recorder.lastError)), \(TrackRecorder.availableDiskSpace()) bytes free"
        )
        return
      }
      #expect(available < 8 << 20 && available > 0 && threshold == 8 << 20)
      try await recorder.wait(until: .idle)
      // Stopped by itself; the file (what was written) arrives through lastFinishedFile and plays.
      let file = try #require(recorder.lastFinishedFile)
      #expect(file.id == "filling" && file.duration > 0)
      #expect(try RecorderFixtures.streams(of: file.url).first?.codec == "h264")
    }

    @Test(.enabled(if: canMount, "needs root and the right to mount a tmpfs"))
    func RC25_RC37_aWriteThatFailsStopsTheRecordingAndKeepsWhatWasWritten() async throws {
      let mountPoint = try #require(try Self.mountTmpfs(bytes: 2 << 20))
      defer { Self.unmount(mountPoint) }
      TrackRecorder.dataRoot = mountPoint
      TrackRecorder.setFreeSpaceSource(nil)
      TrackRecorder.diskSpaceWarningThreshold = 0
      TrackRecorder.diskSpaceCriticalThreshold = 0
      defer {
        TrackRecorder.diskSpaceWarningThreshold = 100 << 20
        TrackRecorder.diskSpaceCriticalThreshold = 50 << 20
      }
      let track = MediaTrack(id: TrackID(.video, channel: 0))
      let recorder = TrackRecorder(videoTrack: track, videoSize: VideoSize(width: 320, height: 240))
      try recorder.startRecording(fileName: "overflow")
      // Far more noise than 2 MB hold: the writer fails (ENOSPC) and the recorder stops by itself.
      var fed = 0
      while recorder.state == .recording && fed < 2000 {
        try await feedNoise(track, from: fed, count: 10)
        fed += 10
        await Task.yield()
      }
      try await recorder.wait(until: .idle)
      let error = try #require(recorder.lastError)
      #expect("\(error)".contains("overflow.mp4") || "\(error)".lowercased().contains("space"), "\(error)")
      let file = try #require(recorder.lastFinishedFile)
      #expect(file.id == "overflow" && file.duration > 0)
      #expect(try RecorderFixtures.streams(of: file.url).first?.codec == "h264")
    }
  }
}
