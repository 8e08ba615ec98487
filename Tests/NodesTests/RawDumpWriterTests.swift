import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import Testing

/// The raw dump's writer on its own: limits, codec changes, tracks, and a place it cannot write.
@Suite struct RawDumpWriterTests {
  private let video = TrackID(.video, channel: 0)
  private let audio = TrackID(.audio, channel: 2)

  private func packet(_ track: TrackID, _ codec: Codec, ms: Int64, bytes: Int) -> EncodedPacket {
    EncodedPacket(
      track: track, format: TrackFormat(codec: codec), time: MediaTime(milliseconds: ms),
      duration: .microseconds(40_000), isKeyframe: ms % 1000 == 0, data: Data(repeating: UInt8(ms % 251), count: bytes))
  }

  private func finish(_ writer: RawDumpWriter, _ reason: RawDumpWriter.StopReason) async -> RawDumpWriter.Summary {
    await withCheckedContinuation { continuation in writer.finish(reason) { continuation.resume(returning: $0) } }
  }

  @Test func theSizeLimitEndsTheDumpBeforeThePacketThatWouldCrossIt() async throws {
    let directory = try TemporaryDirectory()
    let writer = try RawDumpWriter(
      directory: directory.url.appendingPathComponent("dump"), tracks: [video], maximumBytes: 1000,
      maximumDurationMs: 300_000)
    for index in 0..<20 { writer.take(packet(video, .h264, ms: Int64(index) * 40, bytes: 100)) }
    #expect(writer.isFinished)
    let summary = await finish(writer, .stopped)
    #expect(summary.reason == .sizeLimit && summary.failure == nil)
    #expect(summary.files.count == 1 && summary.files[0].packets == 10 && summary.files[0].bytes == 1000)
    let size = try FileManager.default.attributesOfItem(atPath: summary.files[0].url.path)[.size] as? Int
    #expect(size == 1000)
  }

  @Test func aCodecChangeStartsASecondFileAndOtherTracksAreIgnored() async throws {
    let directory = try TemporaryDirectory()
    let writer = try RawDumpWriter(
      directory: directory.url.appendingPathComponent("dump"), tracks: [video, audio], maximumDurationMs: 300_000)
    writer.take(packet(video, .h264, ms: 0, bytes: 10))
    writer.take(packet(TrackID(.video, channel: 1), .h264, ms: 0, bytes: 10))
    writer.take(packet(audio, .g711a, ms: 0, bytes: 160))
    writer.take(packet(video, .h265, ms: 1000, bytes: 20))
    writer.take(packet(video, .h265, ms: 1040, bytes: 20))
    let summary = await finish(writer, .stopped)
    let names = summary.files.map { $0.url.lastPathComponent }.sorted()
    #expect(names == ["audio-2.alaw", "video-0-2.h265", "video-0.h264"])
    #expect(summary.files.first { $0.url.lastPathComponent == "video-0-2.h265" }?.packets == 2)
    // Packets after the end are not captured.
    writer.take(packet(video, .h265, ms: 2000, bytes: 20))
    let again = await finish(writer, .durationLimit)
    #expect(again.reason == .stopped && again.files == summary.files)
  }

  @Test func aFolderThatExistsOrCannotBeMadeIsRefused() throws {
    let directory = try TemporaryDirectory()
    #expect(throws: MediaError.self) {
      _ = try RawDumpWriter(directory: directory.url, tracks: [video], maximumDurationMs: 1)
    }
    #expect(throws: MediaError.self) {
      _ = try RawDumpWriter(
        directory: directory.url.appendingPathComponent("missing/dump"), tracks: [video], maximumDurationMs: 1)
    }
  }
}
