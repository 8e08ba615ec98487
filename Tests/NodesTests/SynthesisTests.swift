import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@Suite("Synthetic recordings, judged by ffprobe and decoded through the graph")
struct SynthesisTests {
  @Test("a synthesized library's records re-assemble into streams ffprobe decodes to the expected counts")
  func ffprobeJudgesTheRecords() throws {
    let directory = try TemporaryDirectory()
    let summary = try LibrarySynthesizer(options: smallOptions()).write(to: directory.url)
    #expect(summary.videoFrames.count == 225)
    #expect(summary.index.segments.count == 3)
    #expect(summary.videoFrames.filter(\.isKeyframe).count == 5)  // frames 0, 50, 100, 150, 200

    let records = try allRecords(of: directory.url)
    let elementary = directory.url.appendingPathComponent("video.h264")
    try records.filter { $0.track.kind == .video }.reduce(Data()) { $0 + $1.payload }.write(to: elementary)
    let video = try #require(try probe(elementary, stream: "v:0"))
    #expect(video.codec_name == "h264")
    #expect(video.width == 320 && video.height == 240)
    #expect(video.nb_read_frames == "225")

    let adts = directory.url.appendingPathComponent("audio.aac")
    try records.filter { $0.track.kind == .audio }.reduce(Data()) { $0 + $1.payload }.write(to: adts)
    let audio = try #require(try probe(adts, stream: "a:0"))
    #expect(audio.codec_name == "aac")
    #expect(audio.nb_read_frames == String(summary.audioRecords))
    #expect(summary.audioRecords > 130)  // 9 s of 64 ms frames, less the encoder's delay
  }

  @Test("decoding through the graph yields exactly the synthesized frames and timestamps, with no gap")
  func graphDecodesEveryFrame() throws {
    let directory = try TemporaryDirectory()
    let options = smallOptions()
    let summary = try LibrarySynthesizer(options: options).write(to: directory.url)
    let range = MediaRange(
      startMilliseconds: options.startMilliseconds, endMilliseconds: options.startMilliseconds + 9000)
    let result = try decode(library: directory.url, range: range)
    #expect(result.failures.isEmpty)
    #expect(result.videoFrames.count == summary.videoFrames.count)
    #expect(result.videoFrames.map(\.time.milliseconds) == summary.videoFrames.map(\.time))
    #expect(result.videoFrames.allSatisfy { $0.frame.width == 320 && $0.frame.height == 240 })
    #expect(result.audioFrames.count == summary.audioRecords)
    // GOPs span objects, and an object boundary is never a gap.
    #expect(result.gaps.isEmpty)
    #expect(result.formatChanges.filter { $0.track.kind == .video }.count == 1)
  }

  @Test("encrypted libraries decode the same")
  func encrypted() throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 6)
    options.encrypt = true
    let summary = try LibrarySynthesizer(options: options).write(to: directory.url)
    #expect(summary.index.segments.allSatisfy { $0.key?.count == 32 })
    let range = MediaRange(
      startMilliseconds: options.startMilliseconds, endMilliseconds: options.startMilliseconds + 6000)
    let result = try decode(library: directory.url, range: range)
    #expect(result.videoFrames.count == 150)
    #expect(result.gaps.isEmpty)
  }

  @Test("G.711 A-law and µ-law audio decode sample for sample")
  func g711() throws {
    for codec in [Codec.g711a, .g711u] {
      let directory = try TemporaryDirectory()
      var options = smallOptions(seconds: 3)
      options.audioCodec = codec
      options.audioSampleRate = 8000
      let summary = try LibrarySynthesizer(options: options).write(to: directory.url)
      let range = MediaRange(
        startMilliseconds: options.startMilliseconds, endMilliseconds: options.startMilliseconds + 3000)
      let result = try decode(library: directory.url, range: range)
      #expect(result.audioFrames.count == summary.audioRecords)
      #expect(result.audioFrames.reduce(0) { $0 + $1.frame.sampleCount } == 3 * 8000)
    }
  }

  @Test("a hole in the recording is a noRecording gap, and decoding resumes at the forced keyframe after it")
  func holes() throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions()
    options.gaps = [(offset: 4, length: 2)]
    let summary = try LibrarySynthesizer(options: options).write(to: directory.url)
    #expect(summary.videoFrames.count == 225 - 50)
    let start = options.startMilliseconds
    let result = try decode(
      library: directory.url, range: MediaRange(startMilliseconds: start, endMilliseconds: start + 9000))
    #expect(result.videoFrames.count == 175)
    #expect(
      result.gaps == [
        RecordingGap(
          range: MediaRange(startMilliseconds: start + 4000, endMilliseconds: start + 6000), tracks: [],
          reasons: [.noRecording])
      ])
  }

  @Test("H.265 recordings (libx265) decode through the graph")
  func h265() throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 3)
    options.videoCodec = .h265
    let summary = try LibrarySynthesizer(options: options).write(to: directory.url)
    let start = options.startMilliseconds
    let result = try decode(
      library: directory.url, range: MediaRange(startMilliseconds: start, endMilliseconds: start + 3000))
    #expect(result.videoFrames.count == summary.videoFrames.count)
    #expect(result.formatChanges.first?.format.codec == .h265)
    #expect(result.formatChanges.first?.format.width == 320)
  }

  @Test("absurd synthesizer options are invalidArgument, before anything is created")
  func absurdOptions() throws {
    let directory = try TemporaryDirectory()
    var cases: [LibrarySynthesizer.Options] = []
    for change in [
      { (o: inout LibrarySynthesizer.Options) in o.startMilliseconds = .max },
      { o in o.startMilliseconds = .min },
      { o in o.durationSeconds = .max },
      { o in o.gaps = [(offset: .max, length: 1)] },
      { o in o.gaps = [(offset: 1, length: .max)] },
      { o in o.gaps = [(offset: -5, length: 1)] },
      { o in o.fps = .max },
      { o in o.segmentSeconds = .max },
    ] {
      var options = smallOptions(seconds: 2)
      change(&options)
      cases.append(options)
    }
    for (number, options) in cases.enumerated() {
      let target = directory.url.appendingPathComponent("lib\(number)")
      do {
        try LibrarySynthesizer(options: options).write(to: target)
        Issue.record("case \(number) was accepted")
      } catch let error as MediaError {
        #expect(error.kind == .invalidArgument, "case \(number): \(error)")
      }
      #expect(!FileManager.default.fileExists(atPath: target.path), "case \(number) created its directory")
    }
  }
}
