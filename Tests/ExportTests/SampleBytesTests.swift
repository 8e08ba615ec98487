import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// The export writes its samples itself (`MP4FragmentWriter`: Annex B start codes become lengths, ADTS
/// headers are dropped); libavformat's MP4 muxer did it before. These tests hold the new writer to the
/// old one's bytes: the library's own records are muxed by `ffmpeg -c copy` (libavformat's
/// `ff_avc_parse_nal_units` and ADTS stripping), and every sample of the export must have the size and
/// MD5 of the reference's sample in the same place. For H.265 the reference cannot be cut the same way:
/// ffmpeg's raw HEVC parser leaves the first zero of the next access unit's four-byte start code at the
/// end of each picture, one byte the muxer keeps; there, every decoded picture must be the reference's
/// (the conversion is the same function: `AnnexBTests` holds it to libavformat's byte by byte).
@Suite("The export's samples are libavformat's")
struct SampleBytesTests {
  @Test("H.264 and H.265 video and AAC audio: the same bytes, sample by sample", arguments: [Codec.h264, .h265])
  func exportedSamplesMatchLibavformat(codec: Codec) throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("library")
    var options = smallOptions(seconds: 6)
    options.videoCodec = codec
    options.segmentSeconds = 2
    try LibrarySynthesizer(options: options).write(to: library)
    // The library's records as elementary streams, in order: what a reference muxer is given.
    var video = Data()
    var audio = Data()
    let cipher = try AES128CBC()
    let objects = try FileManager.default.contentsOfDirectory(atPath: library.appendingPathComponent("objects").path)
      .sorted()
    for name in objects {
      let object = try Data(contentsOf: library.appendingPathComponent("objects").appendingPathComponent(name))
      for record in try SegmentReader.parse(object, key: nil, cipher: cipher).records {
        if record.track.kind == .video { video.append(record.payload) } else { audio.append(record.payload) }
      }
    }
    let videoStream = directory.url.appendingPathComponent(codec == .h265 ? "video.hevc" : "video.h264")
    let audioStream = directory.url.appendingPathComponent("audio.aac")
    try video.write(to: videoStream)
    try audio.write(to: audioStream)
    let reference = directory.url.appendingPathComponent("reference.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-f", codec == .h265 ? "hevc" : "h264", "-i", videoStream.path, "-f", "aac", "-i",
        audioStream.path, "-map", "0:v", "-map", "1:a", "-c", "copy", reference.path,
      ])

    let output = directory.url.appendingPathComponent("export.mp4")
    let (result, _) = try export(library: library, range: range(0, 6_000), to: output)
    #expect(result.report.coveredDurationMs == 6_000)
    let exported = try samples(of: output)
    let expected = try samples(of: reference)
    #expect(exported.video.count == 150)
    if codec == .h264 {
      #expect(exported.video == expected.video, "video samples differ from libavformat's")
    } else {
      let pictures = try decodedPictures(of: output)
      #expect(pictures.count == 150)
      #expect(try pictures == decodedPictures(of: reference), "decoded pictures differ from the reference's")
    }
    // The export may leave out audio past the video's end: its audio is the reference's from the start.
    #expect(exported.audio.count >= 90)
    #expect(exported.audio == Array(expected.audio.prefix(exported.audio.count)), "audio samples differ")
  }

  @Test("a fragmented recording (seed 003): ffprobe reads every picture in order, in about one fragment a second")
  func fragmentsAreReadableBeforeTheIndex() throws {
    let directory = try TemporaryDirectory()
    let output = directory.url.appendingPathComponent("rec.mp4")
    let writer = try FragmentedMP4Writer(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1))
    let executor = ThreadExecutor(name: "test.fragments")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let demuxer = SegmentDemuxer()
    let verifier = try SegmentVerifier()
    pipeline.connect(SyntheticSource(options: smallOptions(seconds: 4)), to: verifier)
    pipeline.connect(verifier, to: demuxer)
    pipeline.connect(demuxer, to: writer)
    let failures = try pipeline.runToCompletion().failures
    #expect(failures.isEmpty, "\(failures)")
    #expect(writer.isFinished)
    let probe = try Probe(output)
    #expect(probe.videoPackets.count == 100)
    #expect(probe.videoPackets.first?.key == true)
    #expect(zip(probe.videoPackets, probe.videoPackets.dropFirst()).allSatisfy { $0.pts < $1.pts })
    let types = try topLevelBoxTypes(output)
    #expect(Array(types.prefix(3)) == ["ftyp", "moov", "free"], "\(types.prefix(4))")
    #expect(types.filter { $0 == "moof" }.count >= 4, "about one fragment a second: \(types)")
  }

  /// The MD5 of every decoded picture of the first video stream, in order.
  private func decodedPictures(of file: URL) throws -> [String] {
    let lines = try run("/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-map", "0:v:0", "-f", "framemd5", "-"])
    return lines.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
      .map { $0.trimmingCharacters(in: .whitespaces) }
  }

  /// (size, MD5) of every sample of the first video and the first audio stream, in decode order.
  private func samples(of file: URL) throws -> (video: [String], audio: [String]) {
    let lines = try run(
      "/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-map", "0", "-c", "copy", "-f", "framemd5", "-"])
    var video: [String] = []
    var audio: [String] = []
    for line in lines.split(separator: "\n") where !line.hasPrefix("#") {
      let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
      guard fields.count >= 6 else { continue }
      let sample = "\(fields[4]) \(fields[5])"
      if fields[0] == "0" { video.append(sample) } else if fields[0] == "1" { audio.append(sample) }
    }
    return (video, audio)
  }
}
