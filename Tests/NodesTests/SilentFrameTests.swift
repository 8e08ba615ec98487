import Foundation
import Testing

@testable import Nodes

/// The AAC-LC silence an MP4's sound track is filled with where the sound had a hole
/// (`MP4Recording.silentFrame(for:)`): constant frames, which must be what libavcodec's encoder makes.
@Suite("AAC-LC silence for holes in an MP4's sound")
struct SilentFrameTests {
  @Test(
    "the silent frame is what libavcodec's AAC encoder makes of silence, at every rate, one and two channels",
    arguments: [8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000], [1, 2])
  func isTheEncodersSilence(rate: Int, channels: Int) throws {
    let encoder = try AACFrameEncoder(sampleRate: rate, channels: channels)
    try encoder.putSilence(encoder.frameSamples * 4)
    let frames = try encoder.encodeFullFrames() + encoder.drain()
    let silence = try #require(MP4Recording.silentFrame(for: encoder.output), "\(encoder.output)")
    // The first frame also carries the encoder's name (a fill element); the others are silence alone.
    #expect(frames.count >= 4 && encoder.frameSamples == 1024)
    #expect(frames.dropFirst().allSatisfy { $0.data == silence }, "\(frames.map { [UInt8]($0.data) })")
  }

  @Test(
    "no silent frame for sound it cannot continue: another object type, 960-sample frames, more channels, a config that disagrees or ends early"
  )
  func otherSoundHasNone() {
    func format(_ config: [UInt8], channels: Int) -> TrackFormat {
      TrackFormat(codec: .aac, sampleRate: 16_000, channels: channels, audioSpecificConfig: Data(config))
    }
    // AAC-LC at 16 kHz, one channel; the same with the rate written out (index 15 and 24 bits).
    #expect(MP4Recording.silentFrame(for: format([0x14, 0x08], channels: 1)) == Data([0x01, 0x18, 0x20, 0x07]))
    #expect(MP4Recording.silentFrame(for: format([0x17, 0x80, 0x1F, 0x40, 0x08], channels: 1)) != nil)
    // Two channels at 44.1 kHz.
    #expect(MP4Recording.silentFrame(for: format([0x12, 0x10], channels: 2))?.count == 6)
    // AAC Main, 960-sample frames, six channels, channels that disagree with the config, cut short, none.
    #expect(MP4Recording.silentFrame(for: format([0x0C, 0x08], channels: 1)) == nil)
    #expect(MP4Recording.silentFrame(for: format([0x14, 0x0C], channels: 1)) == nil)
    #expect(MP4Recording.silentFrame(for: format([0x14, 0x30], channels: 6)) == nil)
    #expect(MP4Recording.silentFrame(for: format([0x12, 0x10], channels: 1)) == nil)
    #expect(MP4Recording.silentFrame(for: format([0x17, 0x80, 0x1F], channels: 1)) == nil)
    #expect(MP4Recording.silentFrame(for: format([], channels: 1)) == nil)
  }
}
