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

/// The one replay that runs on the real clock and threads (the others run on a manual executor and a
/// virtual clock): 3 s of video and audio at 1×, then 2 s more at 2×. It checks what was presented and
/// that the play completed once, never how long anything took.
@Suite struct RealTimeSmokeTests {
  final class Counter: VideoRenderer, AudioDevice, @unchecked Sendable {
    private let lock = NSLock()
    private var pictures: [Int64] = []
    private var sounds = 0
    /// Signalled when the 75th picture (3 s of media) is presented.
    let halfWay = DispatchSemaphore(value: 0)
    func render(_ frame: DecodedFrame) {
      let count = lock.withLock {
        pictures.append(frame.time.microseconds)
        return pictures.count
      }
      if count == 75 { halfWay.signal() }
    }
    func play(_ frame: DecodedFrame, volume: Int) { lock.withLock { sounds += 1 } }
    var presented: (pictures: [Int64], sounds: Int) { lock.withLock { (pictures, sounds) } }
  }

  @Test func aFewSecondsOfRealTimeReplayPresentEveryFrameInOrderAndCompleteOnce() throws {
    let library = try TemporaryDirectory("tipipe-smoke")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library.url)
    let callbacks = DispatchQueue(label: "smoke.callbacks")
    let replay = Replay(
      service: LocalLibraryService(directory: library.url), environment: .realtime(callbacks: callbacks))
    let counter = Counter()
    replay.bindVideo(channel: 0, renderer: counter)
    replay.bindAudio(channel: 1, device: counter)
    let ended = DispatchSemaphore(value: 0)
    let outcomes = Mutex<[String]>([])
    replay.onCompleted = {
      outcomes.withLock { $0.append("completed") }
      ended.signal()
    }
    replay.onError = { error in
      outcomes.withLock { $0.append("error \(error.code.rawValue)") }
      ended.signal()
    }
    #expect(
      replay.play(MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 5000), token: "t")
        == .ok)
    // After 3 s of media at 1× (the timeouts bound nothing: only what was presented is checked).
    #expect(counter.halfWay.wait(timeout: .now() + 120) == .success)
    #expect(replay.setSpeed(.x2) == .ok)
    // Generous: a loaded machine is slow, not wrong.
    #expect(ended.wait(timeout: .now() + 120) == .success)
    callbacks.sync {}
    #expect(outcomes.withLock { $0 } == ["completed"])
    let (pictures, sounds) = counter.presented
    // Frames of [0, 5) s once each, in order: 125 at 25 fps (a loaded machine may drop late ones at 2×;
    // the 1× part is whole).
    #expect(pictures == pictures.sorted() && Set(pictures).count == pictures.count)
    #expect(pictures.count >= 75 && pictures.count <= 125)
    #expect(pictures.first == recordingStart * 1000)
    #expect(sounds > 0)
    #expect(replay.currentTime?.milliseconds == recordingStart + 5000)
    replay.stop()
  }
}
