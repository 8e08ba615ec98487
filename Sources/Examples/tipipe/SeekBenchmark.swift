import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe bench seek`: how long a Replay takes from `seek` to presenting the first frame at the target,
/// over random targets of a range, in real time (the monotonic clock).
enum SeekBenchmark {
  static func run(_ flags: FlagParser) throws -> Int32 {
    let endpoint = try Endpoint(flags)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    guard start < end else { throw TiError(.invalidArgument, "--start must be before --end") }
    let seeks = try flags.integer("--seeks", default: 20, range: 1...10_000)
    let channel = try flags.integer("--video-channel", default: 0, range: 0...255)
    let events = DispatchQueue(label: "tipipe.bench.seek")
    let replay = Replay(service: endpoint.service, environment: .realtime(callbacks: events))
    let watcher = FrameWatcher()
    replay.bindVideo(channel: UInt8(channel), renderer: watcher)
    guard replay.play(MediaRange(startMilliseconds: start, endMilliseconds: end), token: endpoint.token) == .ok else {
      throw TiError(.invalidArgument, "the replay was refused")
    }
    _ = watcher.next(after: 0)
    var generator = SystemRandomNumberGenerator()
    var latencies: [Double] = []
    for _ in 0..<seeks {
      // Targets at least a second before the end, so that a frame follows.
      let target = Int64.random(in: start..<max(start + 1, end - 1000), using: &generator)
      let began = DispatchTime.now().uptimeNanoseconds
      watcher.expect(notBefore: target * 1000)
      replay.seek(to: MediaTime(milliseconds: target))
      let presented = watcher.next(after: began)
      latencies.append(Double(presented - began) / 1e6)
    }
    replay.stop()
    latencies.sort()
    let median = latencies[latencies.count / 2]
    print(
      String(
        format: "%d seeks: first frame after %.1f ms median (min %.1f, max %.1f)", seeks, median, latencies[0],
        latencies[latencies.count - 1]))
    return 0
  }

  /// Notes when a frame at or after the awaited media time is rendered.
  final class FrameWatcher: VideoRenderer, @unchecked Sendable {
    private let condition = NSCondition()
    private var awaited: Int64 = .min
    private var presentedAt: UInt64?

    func expect(notBefore microseconds: Int64) {
      condition.withLock {
        awaited = microseconds
        presentedAt = nil
      }
    }

    func render(_ frame: DecodedFrame) {
      condition.withLock {
        guard presentedAt == nil, frame.time.microseconds >= awaited else { return }
        presentedAt = DispatchTime.now().uptimeNanoseconds
        condition.broadcast()
      }
    }

    /// Waits for the awaited frame; returns when it was presented (uptime nanoseconds).
    func next(after _: UInt64) -> UInt64 {
      condition.withLock {
        while presentedAt == nil { condition.wait() }
        return presentedAt!
      }
    }
  }
}
