import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// The graph's packet history (what a branch joining a paused replay starts from) and the keyframe
/// gate that hands it on before what comes next.
@Suite("PacketHistory")
struct PacketHistoryTests {
  let video = TrackID(.video, channel: 0)
  let audio = TrackID(.audio, channel: 1)
  let format = TrackFormat(codec: .h264, width: 320, height: 240)

  /// A video packet every 40 ms, a keyframe every `gop` ms.
  func packet(_ ms: Int64, gop: Int64 = 2_000, bytes: Int = 1) -> EncodedPacket {
    EncodedPacket(
      track: video, format: format, time: MediaTime(milliseconds: ms), duration: .microseconds(40_000),
      isKeyframe: ms % gop == 0, data: Data(count: bytes))
  }

  func audioPacket(_ ms: Int64) -> EncodedPacket {
    EncodedPacket(
      track: audio, format: TrackFormat(codec: .aac, sampleRate: 8000, channels: 1),
      time: MediaTime(milliseconds: ms), duration: .microseconds(128_000), isKeyframe: false, data: Data([0]))
  }

  /// A running `source → history → sink`.
  func running(_ history: PacketHistory) throws -> (Pipeline, ManualExecutor, ScriptedSource<EncodedPacket>) {
    let executor = ManualExecutor()
    let pipeline = Pipeline(executor: executor, clock: VirtualClock())
    let source = ScriptedSource<EncodedPacket>(endsAfterScript: false)
    pipeline.connect(source, to: history)
    pipeline.connect(history, to: CollectingSink<EncodedPacket>())
    try pipeline.start()
    return (pipeline, executor, source)
  }

  func times(_ packets: [EncodedPacket]?) -> [Int64]? { packets?.map { $0.time.microseconds / 1000 } }

  @Test("it keeps each track from the last keyframe at or before its span behind the newest packet")
  func keepsTheSpan() throws {
    let history = PacketHistory(span: .microseconds(4_000_000))
    let (pipeline, executor, source) = try running(history)
    // Before the first keyframe nothing decodes: nothing is kept.
    source.append([.item(packet(1_960))])
    executor.runUntilIdle()
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 1_960), generation: 0) == nil)
    source.append(
      (50...250).map { .item(packet(Int64($0) * 40)) } + (0...80).map { .item(audioPacket(Int64($0) * 128)) })
    executor.runUntilIdle()
    // Newest 10 000 ms: kept from the keyframe at 6 000 (the last one at or before 6 000) on.
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 5_999), generation: 0) == nil)
    #expect(
      times(history.packets(of: video, decodableAt: MediaTime(milliseconds: 7_960), generation: 0))?.first == 6_000)
    let fromNine = try #require(history.packets(of: video, decodableAt: MediaTime(milliseconds: 9_000), generation: 0))
    #expect(times(fromNine) == (200...250).map { Int64($0) * 40 })
    // Every audio packet decodes alone: from the one at or before the time.
    #expect(
      times(history.packets(of: audio, decodableAt: MediaTime(milliseconds: 10_000), generation: 0))?.first == 9_984)
    #expect(history.packets(of: audio, decodableAt: MediaTime(milliseconds: 5_000), generation: 0) == nil)
    // Of another generation (a flush on its way), nothing.
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 9_000), generation: 1) == nil)
    // A flush empties it.
    _ = pipeline.flush(seekingTo: MediaTime(milliseconds: 0))
    executor.runUntilIdle()
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 9_000), generation: 1) == nil)
    source.append([.item(packet(12_000)), .item(packet(12_040))])
    executor.runUntilIdle()
    #expect(
      times(history.packets(of: video, decodableAt: MediaTime(milliseconds: 12_040), generation: 1)) == [
        12_000, 12_040,
      ])
  }

  @Test("bytes are bounded: old groups go first, and a group larger than the bound alone is not kept")
  func boundedBytes() throws {
    let history = PacketHistory(span: .microseconds(60_000_000), maximumBytes: 1_000)
    let (pipeline, executor, source) = try running(history)
    // 10 bytes a packet, a keyframe every 400 ms (100 bytes a group): ten groups fit.
    source.append((0..<200).map { .item(packet(Int64($0) * 40, gop: 400, bytes: 10)) })
    executor.runUntilIdle()
    let kept = try #require(history.packets(of: video, decodableAt: MediaTime(milliseconds: 4_000), generation: 0))
    #expect(kept.count == 100 && kept.first?.time == MediaTime(milliseconds: 4_000))
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 3_999), generation: 0) == nil)
    // One group of 2 000 bytes: nothing of it is kept, until the next keyframe.
    source.append((200..<250).map { .item(packet(Int64($0) * 40, gop: 8_000, bytes: 40)) })
    executor.runUntilIdle()
    #expect(history.packets(of: video, decodableAt: MediaTime(milliseconds: 9_960), generation: 0) == nil)
    source.append([.item(packet(16_000, gop: 8_000, bytes: 40))])
    executor.runUntilIdle()
    #expect(times(history.packets(of: video, decodableAt: MediaTime(milliseconds: 16_000), generation: 0)) == [16_000])
    withExtendedLifetime(pipeline) {}
  }

  @Test("a gate joining with the history hands on what it kept, then what comes next: no gap, nothing twice")
  func aGateCatchesUp() throws {
    let history = PacketHistory()
    let (pipeline, executor, source) = try running(history)
    source.append((0..<75).map { .item(packet(Int64($0) * 40)) })
    executor.runUntilIdle()
    // Joined at 2 500 ms: from the keyframe at 2 000 ms; without the history, from the one at 4 000 ms.
    let caughtUp = CollectingSink<EncodedPacket>(name: "caughtUp")
    let waiting = CollectingSink<EncodedPacket>(name: "waiting")
    try pipeline.attach { pipeline in
      let gate = KeyframeGate(track: video, opensAt: MediaTime(milliseconds: 2_500), history: history)
      pipeline.connect(history, to: gate)
      pipeline.connect(gate, to: caughtUp)
      let plain = KeyframeGate(name: "plain", track: video, opensAt: MediaTime(milliseconds: 2_500))
      pipeline.connect(history, to: plain)
      pipeline.connect(plain, to: waiting)
    }
    executor.runUntilIdle()
    source.append((75..<150).map { .item(packet(Int64($0) * 40)) })
    executor.runUntilIdle()
    let received = caughtUp.received.compactMap { entry -> Int64? in
      if case .item(let packet) = entry { return packet.time.microseconds / 1000 }
      return nil
    }
    #expect(received == (50..<150).map { Int64($0) * 40 })
    let plain = waiting.received.compactMap { entry -> Int64? in
      if case .item(let packet) = entry { return packet.time.microseconds / 1000 }
      return nil
    }
    #expect(plain == (100..<150).map { Int64($0) * 40 })
  }
}
