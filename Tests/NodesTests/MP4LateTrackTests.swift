import Foundation
import MediaTestSupport
import PipelineGraph
import PipelineTestKit
import Testing

@testable import Nodes

/// A sound track declared after the file was made (`MP4Recording.addAudio(_:)`): the working file is a
/// valid fragmented MP4 at every step, so a writer killed after it keeps both tracks (each starting at 0,
/// as every fragmented file of the writer has it: the finished file's edit list places the sound).
@Suite("MP4: a sound track that joins a file already written")
struct MP4LateTrackTests {
  /// The packets of a 6 s file whose sound begins 3 s in: picture and sound, in the file's order.
  static func packets(in directory: URL, encoder: String = "libx264") throws -> [EncodedPacket] {
    let file = directory.appendingPathComponent("late.mkv")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25:duration=6", "-itsoffset", "3",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=3", "-map", "0:v", "-map", "1:a", "-c:v",
        encoder, "-g", "25", "-c:a", "aac", file.path,
      ])
    let executor = ThreadExecutor(name: "test.late-track")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let sink = CollectingSink<EncodedPacket>()
    pipeline.connect(MediaFileSource(path: file.path), to: sink)
    #expect(try pipeline.runToCompletion().failures.isEmpty)
    return sink.items
  }

  @Test(
    "the fragmented file kept after the sound joined has both streams, whichever wrote the header (ours for H.264, libavformat's for H.265)",
    arguments: ["libx264", "libx265"])
  func aKilledWriterKeepsTheLateTrack(_ encoder: String) throws {
    let directory = try TemporaryDirectory()
    let packets = try Self.packets(in: directory.url, encoder: encoder)
    let video = try #require(packets.first { $0.track.kind == .video })
    let working = directory.url.appendingPathComponent("working.mp4").path
    let recording = try MP4Recording(workingPath: working, video: video.format, audio: nil, reservedIndexBytes: 1 << 16)
    recording.begin(at: video.time)
    var joined = false
    for packet in packets {
      if packet.track.kind == .video {
        try recording.writeVideo(packet)
      } else {
        if !joined { joined = recording.addAudio(packet.format) }
        try recording.writeAudio(packet)
      }
    }
    #expect(joined)
    // A second request changes nothing.
    #expect(recording.addAudio(try #require(packets.last { $0.track.kind == .audio }).format) == false)
    try recording.end(at: MediaTime(microseconds: .max))
    // Killed here: the file is what the fragments hold.
    recording.close()
    let streams = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0", working])
    let codec = encoder == "libx264" ? "h264" : "hevc"
    #expect(streams.split(separator: "\n").map(String.init) == ["\(codec),video", "aac,audio"], "\(streams)")
    let audio = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "a", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of",
        "csv=p=0", working,
      ])
    // 3 s of 16 kHz sound in 1024-sample frames.
    #expect(abs((Int(audio.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 47) <= 2, "\(audio)")
    #expect(try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", working, "-f", "null", "-"]).isEmpty)
  }

  /// The streams ffprobe finds in `path`: `codec,kind` lines.
  static func streams(_ path: String) throws -> [String] {
    try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,codec_type", "-of", "csv=p=0", path]
    ).split(separator: "\n").map(String.init)
  }

  @Test("a header without room for the track: the sound is left out when its first frame comes, asked once")
  func noRoom() throws {
    let directory = try TemporaryDirectory()
    let packets = try Self.packets(in: directory.url)
    let video = try #require(packets.first { $0.track.kind == .video })
    let sound = try #require(packets.first { $0.track.kind == .audio })
    let working = directory.url.appendingPathComponent("tight.mp4").path
    let recording = try MP4Recording(workingPath: working, video: video.format, audio: nil, reservedIndexBytes: 64)
    recording.begin(at: video.time)
    #expect(recording.addAudio(sound.format))
    for packet in packets {
      if packet.track.kind == .video { try recording.writeVideo(packet) } else { try recording.writeAudio(packet) }
    }
    try recording.end(at: MediaTime(microseconds: .max))
    #expect(recording.audio == nil && recording.audioPackets == 0)
    #expect(recording.addAudio(sound.format) == false)
    recording.close()
    #expect(try Self.streams(working) == ["h264,video"])
  }

  @Test("sound taken but none of its frames written (it starts after the last picture): no empty track")
  func noFrameNoTrack() throws {
    let directory = try TemporaryDirectory()
    let packets = try Self.packets(in: directory.url)
    let video = packets.filter { $0.track.kind == .video }
    let sound = try #require(packets.first { $0.track.kind == .audio })
    let working = directory.url.appendingPathComponent("short.mp4").path
    let recording = try MP4Recording(
      workingPath: working, video: video[0].format, audio: nil, reservedIndexBytes: 1 << 16)
    recording.begin(at: video[0].time)
    // Two seconds of picture; the sound (from 3 s) is taken but lies past the stretch's end.
    for packet in video where packet.time < MediaTime(microseconds: 2_000_000) { try recording.writeVideo(packet) }
    #expect(recording.addAudio(sound.format))
    try recording.writeAudio(sound)
    try recording.end(at: MediaTime(microseconds: 2_000_000))
    recording.close()
    #expect(try Self.streams(working) == ["h264,video"])
  }
}
