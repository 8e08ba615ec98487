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
    let harness = try NodeHarness(try FrameDecoder(track: TrackID(.video, channel: 0), keyframesOnly: true))
    harness.push(contentsOf: try smallLibraryPackets())
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.outputItems.map { $0.time.milliseconds - recordingStart } == [0, 2000, 4000, 6000, 8000])
  }

  @Test("a consumer's quality-of-service demand: keyframes only until everything; nothing keeps the packets")
  func qualityOfService() throws {
    let track = TrackID(.video, channel: 0)
    let packets = try smallLibraryPackets().filter { $0.track == track }
    func during(_ from: Int64, _ to: Int64) -> [EncodedPacket] {
      packets.filter { (from..<to).contains($0.time.milliseconds - recordingStart) }
    }
    func shown(_ frames: ArraySlice<DecodedFrame>) -> [Int64] { frames.map { $0.time.milliseconds - recordingStart } }
    let harness = try NodeHarness(try FrameDecoder(track: track, threads: 1))
    harness.sendUpstream(.qualityOfService(QualityOfService(.essentialOnly, lateness: .milliseconds(300))))
    harness.push(contentsOf: during(0, 4000))
    harness.runUntilIdle()
    #expect(shown(harness.outputItems[...]) == [0, 2000])
    // Everything again: decoding resumes at the next keyframe, every picture from there.
    harness.sendUpstream(.qualityOfService(QualityOfService(.everything)))
    harness.push(contentsOf: during(4000, 6000))
    harness.runUntilIdle()
    let resumed = harness.outputItems.dropFirst(2)
    #expect(resumed.count == during(4000, 6000).count)
    #expect(shown(resumed).first == 4000)
    // Nothing: no picture, the packets kept; decoded first when the consumer wants everything again.
    let before = harness.outputItems.count
    harness.sendUpstream(.qualityOfService(QualityOfService(.nothing)))
    harness.push(contentsOf: during(6000, 8000))
    harness.runUntilIdle()
    #expect(harness.outputItems.count == before)
    harness.sendUpstream(.qualityOfService(QualityOfService(.everything)))
    harness.push(contentsOf: during(8000, 10_000))
    harness.endInput()
    harness.runUntilIdle()
    let rest = harness.outputItems.dropFirst(before)
    #expect(rest.count == during(6000, 10_000).count)
    #expect(shown(rest).first == 6000)
    // The decoder did what was asked: nothing went further up.
    #expect(harness.upstreamEvents.isEmpty)
  }

  @Test("a seek ends keyframes-only decoding; a demand for nothing outlasts it")
  func qualityOfServiceAcrossASeek() throws {
    let track = TrackID(.video, channel: 0)
    let packets = try smallLibraryPackets().filter { $0.track == track }
    let firstGroup = packets.filter { $0.time.milliseconds - recordingStart < 2000 }
    let harness = try NodeHarness(try FrameDecoder(track: track, threads: 1))
    harness.sendUpstream(.qualityOfService(QualityOfService(.essentialOnly)))
    harness.flush()
    harness.push(contentsOf: firstGroup)
    harness.runUntilIdle()
    #expect(harness.outputItems.count == firstGroup.count)
    harness.sendUpstream(.qualityOfService(QualityOfService(.nothing)))
    harness.flush()
    harness.push(contentsOf: firstGroup)
    harness.runUntilIdle()
    #expect(harness.outputItems.count == firstGroup.count)
  }

  /// The packets of `smallOptions()`'s library, verified and demuxed, in order.
  private func smallLibraryPackets() throws -> [EncodedPacket] {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions()).write(to: directory.url)
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
    return demuxed.outputItems
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
