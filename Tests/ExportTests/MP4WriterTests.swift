import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("MP4Writer and the synthetic source")
struct MP4WriterTests {
  @Test("SyntheticSource → verify → demux → MP4Writer records a file ffprobe reads, H.265 tagged hvc1")
  func recordsSyntheticMedia() throws {
    for codec in [Codec.h264, .h265] {
      let directory = try TemporaryDirectory()
      var options = smallOptions(seconds: 6)
      options.videoCodec = codec
      options.gaps = [(offset: 3, length: 1)]
      let output = directory.url.appendingPathComponent("rec.mp4")
      let executor = ThreadExecutor(name: "test.record")
      defer { executor.shutdown() }
      let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
      let source = SyntheticSource(options: options)
      let verifier = try SegmentVerifier()
      let demuxer = SegmentDemuxer()
      let writer = MP4Writer(
        destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1))
      let gaps = GapCounter()
      pipeline.connect(source, to: verifier)
      pipeline.connect(verifier, to: demuxer)
      pipeline.connect(demuxer, to: writer)
      pipeline.connect(demuxer, to: gaps)
      let failures = try pipeline.runToCompletion().failures
      #expect(failures.isEmpty, "\(failures)")
      #expect(gaps.gaps == ["noRecording"], "the synthetic source reports its hole")
      let probe = try Probe(output)
      #expect(probe.video?.codec_name == (codec == .h265 ? "hevc" : "h264"))
      #expect(probe.video?.codec_tag_string == (codec == .h265 ? "hvc1" : "avc1"))
      #expect(probe.audio?.codec_name == "aac")
      // 5 s of video (the hole is kept as a gap in time, not filled).
      #expect(probe.videoPackets.count == 125)
      #expect(abs(probe.duration - 6.0) < 0.1)
      #expect(probe.videoPackets.first?.key == true)
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["rec.mp4"])
    }
  }

  @Test("an index larger than the reserved room falls back to a remux, still with the index at the front")
  func remuxFallback() throws {
    let directory = try TemporaryDirectory()
    let output = directory.url.appendingPathComponent("small-room.mp4")
    let executor = ThreadExecutor(name: "test.fallback")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let source = SyntheticSource(options: smallOptions(seconds: 4))
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer()
    let writer = MP4Writer(
      destination: output, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1),
      reservedIndexBytes: 16)
    pipeline.connect(source, to: verifier)
    pipeline.connect(verifier, to: demuxer)
    pipeline.connect(demuxer, to: writer)
    #expect(try pipeline.runToCompletion().failures.isEmpty)
    let probe = try Probe(output)
    #expect(probe.videoPackets.count == 100)
    let types = try topLevelBoxTypes(output)
    #expect(Array(types.prefix(2)) == ["ftyp", "moov"])
    #expect(!types.contains("moof"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["small-room.mp4"])
  }

  @Test("keyframe-only decoding decodes exactly the keyframes")
  func keyframesOnly() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions()).write(to: directory.url)
    let harness = try NodeHarness(try FrameDecoder(track: TrackID(.video, channel: 0), keyframesOnly: true))
    let demuxed = try NodeHarness(SegmentDemuxer())
    let verifier = try NodeHarness(try SegmentVerifier())
    let index = try RecordingIndex.decode(try Data(contentsOf: directory.url.appendingPathComponent("index.json")))
    for segment in index.segments {
      let bytes = try Data(contentsOf: directory.url.appendingPathComponent(segment.url))
      verifier.push(FetchedObject(segment: segment, result: .success(bytes)))
    }
    // The verifier works on other threads: wait for its results through the executor.
    while verifier.outputItems.count < index.segments.count {
      verifier.runUntilIdle()
      if verifier.outputItems.count < index.segments.count {
        try #require(verifier.executor.waitForWork(timeout: testDeadline), "the verifier's results")
      }
    }
    demuxed.push(contentsOf: verifier.outputItems)
    demuxed.endInput()
    demuxed.runUntilIdle()
    harness.push(contentsOf: demuxed.outputItems)
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.outputItems.map { $0.time.milliseconds - recordingStart } == [0, 2000, 4000, 6000, 8000])
  }
}

final class GapCounter: Node, @unchecked Sendable {
  typealias Input = EncodedPacket
  typealias Output = Never
  var gaps: [String] = []
  func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {}
  func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    if case .gap(let gap as RecordingGap) = event { gaps += gap.reasons.map(\.rawValue) }
  }
}
