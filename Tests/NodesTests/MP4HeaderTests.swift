import Foundation
import Testing

@testable import Nodes

/// ``MP4Header`` writes the start of an H.264 + AAC fragmented MP4 instead of libavformat (a stream
/// copy of H.264 then loads no FFmpeg library): for each kind of track it must write libavformat's bytes
/// but for the `udta` box that names the muxer, and leave to libavformat what it does not write.
@Suite("MP4 headers as libavformat writes them")
struct MP4HeaderTests {
  /// AudioSpecificConfig of AAC-LC: 48 kHz stereo, 16 kHz mono, 8 kHz mono, 96 kHz stereo.
  static let stereo48k = TrackFormat(
    codec: .aac, sampleRate: 48_000, channels: 2, audioSpecificConfig: Data([0x11, 0x90]))
  static let mono16k = TrackFormat(
    codec: .aac, sampleRate: 16_000, channels: 1, audioSpecificConfig: Data([0x14, 0x08]))
  static let mono8k = TrackFormat(codec: .aac, sampleRate: 8_000, channels: 1, audioSpecificConfig: Data([0x15, 0x88]))
  static let stereo96k = TrackFormat(
    codec: .aac, sampleRate: 96_000, channels: 2, audioSpecificConfig: Data([0x10, 0x10]))

  @Test(
    "libx264's parameter sets, with and without sound: libavformat's bytes",
    arguments: [
      ("-s 1280x720 -profile:v baseline", 1), ("-s 1920x1080 -profile:v high", 0),
      ("-s 1366x768 -profile:v main", 2), ("-s 350x198 -pix_fmt yuv422p10le", 3),
      ("-s 250x146 -pix_fmt yuv444p", nil), ("-s 640x484 -x264-params interlaced=1", 0),
    ] as [(String, Int?)])
  func video(_ options: String, sound: Int?) throws {
    let keyframe = try Self.libx264Keyframe(options)
    let video = try VideoParameterProbe(codec: .h264).format(ofKeyframe: keyframe)
    let audio = sound.map { [Self.stereo48k, Self.mono16k, Self.mono8k, Self.stereo96k][$0] }
    let ours = try #require(MP4Header.make(video: video, audio: audio))
    #expect(ours == (try Self.libavformat(video: video, audio: audio)), "\(options)")
  }

  @Test(
    "an SPS whose first bytes carry an emulation prevention byte: libavformat's bytes; a picture too wide: left to libavformat, which refuses it"
  )
  func unusualSets() throws {
    // Profile 0, no constraint flags, level 1: `00 00 01` is written `00 00 03 01`; libavformat copies the
    // escaped bytes into the avcC.
    var odd = RandomSPS.plain
    (odd.profile, odd.compatibility, odd.level) = (0, 0, 1)
    let sets = Data(odd.annexB(pictureID: 0))
    #expect(sets.starts(with: [0, 0, 0, 1, 0x67, 0, 0, 3, 1]))
    let video = TrackFormat(codec: .h264, width: 320, height: 240, parameterSets: sets)
    #expect(try #require(MP4Header.make(video: video, audio: nil)) == (try Self.libavformat(video: video, audio: nil)))
    // 70,000 pixels across (libavcodec decodes up to 131,056): libavformat refuses it, and so the export
    // as before.
    let wide = TrackFormat(codec: .h264, width: 70_000, height: 16, parameterSets: sets)
    #expect(MP4Header.make(video: wide, audio: nil) == nil)
    #expect(throws: MediaError.self) { try Self.libavformat(video: wide, audio: nil) }
  }

  @Test("sound alone, at 8, 16, 48 and 96 kHz: libavformat's bytes")
  func soundAlone() throws {
    for audio in [Self.mono8k, Self.mono16k, Self.stereo48k, Self.stereo96k] {
      let ours = try #require(MP4Header.make(video: nil, audio: audio))
      #expect(ours == (try Self.libavformat(video: nil, audio: audio)), "\(audio.sampleRate) Hz")
    }
  }

  @Test("H.265, a profile read with another list, sets not in Annex B or missing: left to libavformat")
  func leftToLibavformat() throws {
    let keyframe = try Self.libx264Keyframe("-s 320x240")
    let video = try VideoParameterProbe(codec: .h264).format(ofKeyframe: keyframe)
    #expect(MP4Header.make(video: video, audio: nil) != nil)
    var hevc = video
    hevc.codec = .h265
    #expect(MP4Header.make(video: hevc, audio: nil) == nil)
    var noSets = video
    noSets.parameterSets = Data()
    #expect(MP4Header.make(video: noSets, audio: Self.stereo48k) == nil)
    // Only the SPS: no PPS.
    var spsOnly = video
    spsOnly.parameterSets = VideoParameterProbe.parameterSets(in: keyframe, codec: .h264)
    let units = VideoParameterProbe.nalUnits(in: spsOnly.parameterSets)
    spsOnly.parameterSets = Data([0, 0, 0, 1]) + units[0]
    #expect(MP4Header.make(video: spsOnly, audio: nil) == nil)
    // Profile 144 (the withdrawn High 4:4:4): libavformat reads its avcC fields with another list.
    var old = RandomSPS.plain
    old.profile = 144
    var withdrawn = video
    withdrawn.parameterSets = Data(old.annexB(pictureID: 0))
    #expect(MP4Header.make(video: withdrawn, audio: nil) == nil)
    #expect(MP4Header.make(video: nil, audio: nil) == nil)
  }

  /// libavformat's header for the tracks, its `udta` taken out of the `moov`.
  static func libavformat(video: TrackFormat?, audio: TrackFormat?) throws -> Data {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("header-\(UUID().uuidString).mp4").path
    defer { unlink(path) }
    _ = try MP4File.writeHeaderWithLibavformat(path: path, video: video, audio: audio)
    var boxes = try MP4Box.parse(try Data(contentsOf: URL(fileURLWithPath: path)))
    try #require(boxes.map(\.type) == ["ftyp", "moov"])
    boxes[1].children.removeAll { $0.type == "udta" }
    var bytes = Data()
    for box in boxes { box.encode(into: &bytes) }
    return bytes
  }

  /// One keyframe of libx264 (Annex B) with `options` (`-s W×H` first).
  static func libx264Keyframe(_ options: String) throws -> Data {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("x264-\(UUID().uuidString).h264")
    defer { try? FileManager.default.removeItem(at: output) }
    let words = options.split(separator: " ").map(String.init)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments =
      ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=\(words[1]):d=0.1", "-frames:v", "1", "-c:v", "libx264"]
      + words.dropFirst(2) + ["-f", "h264", output.path]
    try process.run()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "ffmpeg \(options)")
    return try Data(contentsOf: output)
  }
}
