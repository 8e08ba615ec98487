import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// T13 on the engine: a recorder whose disk stalls ends during the play, counting only what played.
@Suite struct ReplayRecorderTests {
  @Test func T13_aWriterThatFallsBehindEndsItsTaskDuringThePlayAndLeavesNoFile() throws {
    let harness = try ReplayHarness(seconds: 9)
    let objects = try FileManager.default.subpathsOfDirectory(atPath: harness.library.path)
      .filter { !$0.hasSuffix(".json") }
      .map { try FileManager.default.attributesOfItem(atPath: harness.library.appendingPathComponent($0).path) }
      .compactMap { $0[.type] as? FileAttributeType == .typeRegular ? $0[.size] as? Int : nil }
    // About 3 s of the 9 s of media: read ahead, the whole recording is more than that.
    let limit = objects.reduce(0, +) / 3
    let output = harness.library.appendingPathComponent("recording.mp4")
    let disk = DispatchQueue(label: "a stalled disk")
    disk.suspend()
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: nil, maximumPendingBytes: limit,
      queue: disk)
    let ended = DispatchSemaphore(value: 0)
    let naturally = Locked<Bool?>(nil)
    harness.play(0, 9000)
    harness.run(for: .milliseconds(40))
    #expect(
      harness.replay.addRecorder(recorder) { value in
        naturally.withLock { $0 = value }
        ended.signal()
      } == .ok)
    // What was read ahead and not played does not count.
    harness.run(for: .seconds(1))
    #expect(!recorder.hasFallenBehind)
    harness.run(for: .seconds(5))
    #expect(recorder.hasFallenBehind)
    // The task ends during the play (on a queue of the recorder's), not at its end.
    #expect(ended.wait(timeout: .now() + 60) == .success)
    #expect(naturally.withLock { $0 } == false)
    harness.runToEnd()
    #expect(harness.log.completions == 1)
    #expect(harness.renderer.frames.count == 225)
    disk.resume()
    let result = try recorder.finishWithinDeadline(playedToTheEnd: false)
    guard case .failure(let error) = result else {
      Issue.record("the recording did not fail: \(result)")
      return
    }
    #expect(error.kind == .fellBehind)
    // The result did not wait for the disk; the unfinished file's removal did.
    disk.sync {}
    // No file, finished or not.
    let left = try FileManager.default.contentsOfDirectory(atPath: harness.library.path)
    #expect(!left.contains { $0.hasPrefix("recording") || $0.hasPrefix(".recording") })
  }
}
