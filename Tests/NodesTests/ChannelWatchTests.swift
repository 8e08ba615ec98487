import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Synchronization
import Testing

/// The channel watch (O40: 6130 for an output bound to a channel that carries nothing while others of
/// its kind do), for tracks watched from the start and tracks that join while it runs.
@Suite("ChannelWatch")
struct ChannelWatchTests {
  let zero = TrackID(.video, channel: 0)
  let three = TrackID(.video, channel: 3)
  let format = TrackFormat(codec: .h264, width: 320, height: 240)

  func packet(_ ms: Int64, _ track: TrackID) -> Recorded<EncodedPacket> {
    .item(
      EncodedPacket(
        track: track, format: format, time: MediaTime(milliseconds: ms), duration: .microseconds(40_000),
        isKeyframe: false, data: Data([0])))
  }

  /// A running `source → watch` and what it reported.
  func running(watching tracks: Set<TrackID>) throws -> (
    Pipeline, ManualExecutor, ScriptedSource<EncodedPacket>, ChannelWatch, Reports
  ) {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<EncodedPacket>(endsAfterScript: false)
    let reports = Reports()
    let watch = ChannelWatch(tracks: tracks) { track, time, _ in
      reports.note("\(track) at \(time.microseconds / 1000)")
    }
    pipeline.connect(source, to: watch)
    try pipeline.start()
    return (pipeline, executor, source, watch, reports)
  }

  @Test("a watched track is reported once other channels of its kind carried 5 s without it, once")
  func fromTheStart() throws {
    let (pipeline, executor, source, _, reports) = try running(watching: [three])
    source.append((0...160).map { packet(Int64($0) * 40, zero) })
    executor.runUntilIdle()
    #expect(reports.all == ["video:3 at 5000"])
    withExtendedLifetime(pipeline) {}
  }

  @Test("a track watched from a time already passed is judged by what the watch noted of that stretch")
  func joiningLate() throws {
    let (pipeline, executor, source, watch, reports) = try running(watching: [])
    source.append((0...200).map { packet(Int64($0) * 40, zero) })
    executor.runUntilIdle()
    // Watched from 2 s: 6 s of channel 0 went by since, none of channel 3: reported at 7 s, returned.
    let missing = watch.watch(three, since: MediaTime(milliseconds: 2_000))
    #expect(missing?.time == MediaTime(milliseconds: 7_000))
    #expect(missing?.generation == 0)
    // From 5 s only 3 s went by: watched on, reported by the packets that follow.
    let four = TrackID(.video, channel: 4)
    #expect(watch.watch(four, since: MediaTime(milliseconds: 5_000)) == nil)
    source.append((201...260).map { packet(Int64($0) * 40, zero) })
    executor.runUntilIdle()
    #expect(reports.all == ["video:4 at 10000"])
    // A track seen since the time it is watched from carries media: nothing to report.
    #expect(watch.watch(zero, since: MediaTime(milliseconds: 1_000)) == nil)
    source.append((261...500).flatMap { [packet(Int64($0) * 40, three), packet(Int64($0) * 40, zero)] })
    executor.runUntilIdle()
    #expect(reports.all == ["video:4 at 10000"])
    withExtendedLifetime(pipeline) {}
  }
}

/// What a watch reported, in order.
final class Reports: Sendable {
  private let noted = Mutex<[String]>([])
  func note(_ line: String) { noted.withLock { $0.append(line) } }
  var all: [String] { noted.withLock { $0 } }
}
