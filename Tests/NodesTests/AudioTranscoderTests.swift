import Foundation
import PipelineGraph
import PipelineTestKit
import Testing

@testable import Nodes

/// `AudioTranscoder` where the sound of one track changes codec: what it held leaves first, in order, and
/// the encoder's priming frame is not put back over the other codec's packets.
@Suite("AudioTranscoder across a change of codec")
struct AudioTranscoderTests {
  let track = TrackID(.audio, channel: 1)
  let alaw = TrackFormat(codec: .g711a, sampleRate: 8000, channels: 1)
  let aac = TrackFormat(codec: .aac, sampleRate: 16_000, channels: 1)

  /// A 20 ms A-law record (a tone's worth of varied bytes) at `milliseconds`.
  func record(_ milliseconds: Int64) -> EncodedPacket {
    EncodedPacket(
      track: track, format: alaw, time: MediaTime(microseconds: milliseconds * 1000),
      duration: .microseconds(20_000), isKeyframe: true,
      data: Data((0..<160).map { UInt8(truncatingIfNeeded: $0 * 37 + Int(milliseconds)) }))
  }

  @Test("G.711, then AAC, then G.711: every packet leaves in time order, the second stretch without a priming frame")
  func switchAndBack() throws {
    let harness = try NodeHarness(try AudioTranscoder())
    // 1 s of G.711, 1 s of AAC (passed through), 1 s of G.711.
    harness.push(contentsOf: (0..<50).map { record(Int64($0) * 20) })
    harness.push(
      contentsOf: (0..<15).map { index in
        EncodedPacket(
          track: track, format: aac, time: MediaTime(microseconds: 1_000_000 + Int64(index) * 64_000),
          duration: .microseconds(64_000), isKeyframe: true, data: Data(repeating: 0x21, count: 40))
      })
    harness.push(contentsOf: (100..<150).map { record(Int64($0) * 20) })
    harness.endInput()
    _ = harness.runUntilIdle()
    let packets = harness.outputItems
    // In order: the first stretch's frames all leave before the first AAC packet.
    let times = packets.map(\.time.microseconds)
    let firstAAC = try #require(packets.firstIndex { $0.format == aac })
    #expect(packets[..<firstAAC].allSatisfy { $0.format.codec == .aac && $0.format.sampleRate == 8000 })
    #expect(packets[..<firstAAC].allSatisfy { $0.time.microseconds < 1_100_000 }, "\(times)")
    // The second G.711 stretch starts at its first record (2 s), not a frame (128 ms) before it.
    let second = packets[firstAAC...].filter { $0.format.sampleRate == 8000 }
    #expect(second.first?.time.microseconds == 2_000_000, "\(second.map(\.time.microseconds))")
    #expect(second.count >= 7)
    _ = harness.finish()
  }
}
