import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// What a decode pipeline saw.
struct DecodeRun {
  var videoFrames: [DecodedFrame]
  var audioFrames: [DecodedFrame]
  var gaps: [RecordingGap]
  var formatChanges: [FormatChange]
  var failures: [NodeFailure]
}

/// Sinks read by the test thread after the end-of-stream handshake.
final class FrameCollector: Node, @unchecked Sendable {
  typealias Input = DecodedFrame
  typealias Output = Never
  let name: String
  var frames: [DecodedFrame] = []
  var gaps: [RecordingGap] = []
  var formatChanges: [FormatChange] = []
  init(name: String) { self.name = name }
  func process(_ input: DecodedFrame, context: NodeContext<Never>) throws { frames.append(input) }
  func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    if case .gap(let gap as RecordingGap) = event { gaps.append(gap) }
    if case .formatChange(let change as FormatChange) = event { formatChanges.append(change) }
  }
}

/// `CloudSegmentSource → SegmentVerifier → SegmentDemuxer ─┬→ FrameDecoder(video) → collector`
///                                                        `└→ FrameDecoder(audio) → collector`
/// on a thread executor; returns once every sink has ended.
func decode(
  library: URL, range: MediaRange, videoChannel: UInt8 = 0, audioChannel: UInt8? = 1, startingAt: MediaTime? = nil
) throws -> DecodeRun {
  let executor = ThreadExecutor(name: "test.decode")
  defer { executor.shutdown() }
  let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
  let source = CloudSegmentSource(directory: library, range: range, prefetchBytes: 1 << 20)
  let verifier = try SegmentVerifier()
  let demuxer = SegmentDemuxer(startingAt: startingAt)
  let videoDecoder = try FrameDecoder(name: "videoDecoder", track: TrackID(.video, channel: videoChannel))
  let video = FrameCollector(name: "video")
  pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
  pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
  pipeline.connect(demuxer, to: videoDecoder, limits: EdgeLimits(items: 64))
  pipeline.connect(videoDecoder, to: video, limits: EdgeLimits(items: 8))
  let audio = FrameCollector(name: "audio")
  if let audioChannel {
    let audioDecoder = try FrameDecoder(name: "audioDecoder", track: TrackID(.audio, channel: audioChannel))
    pipeline.connect(demuxer, to: audioDecoder, limits: EdgeLimits(items: 64))
    pipeline.connect(audioDecoder, to: audio, limits: EdgeLimits(items: 8))
  }
  let failures = try pipeline.runToCompletion().failures
  return DecodeRun(
    videoFrames: video.frames, audioFrames: audio.frames, gaps: video.gaps, formatChanges: video.formatChanges,
    failures: failures)
}

/// ffprobe's view of one stream of a file: codec, size and the number of frames it decodes.
struct ProbedStream: Decodable {
  var codec_name: String
  var width: Int?
  var height: Int?
  var nb_read_frames: String?
}

func probe(_ file: URL, stream: String) throws -> ProbedStream? {
  let json = try run(
    "/usr/bin/ffprobe",
    [
      "-v", "error", "-count_frames", "-select_streams", stream, "-show_entries",
      "stream=codec_name,width,height,nb_read_frames", "-of", "json", file.path,
    ])
  struct Output: Decodable { var streams: [ProbedStream] }
  return try JSONDecoder().decode(Output.self, from: Data(json.utf8)).streams.first
}

/// Every record of every object of a library, in order.
func allRecords(of library: URL) throws -> [SegmentRecord] {
  let index = try RecordingIndex.decode(try Data(contentsOf: library.appendingPathComponent("index.json")))
  let cipher = try AES128CBC()
  var records: [SegmentRecord] = []
  for segment in index.segments {
    let bytes = try Data(contentsOf: library.appendingPathComponent(segment.url))
    records += try SegmentReader.parse(bytes, key: try segment.keyBytes(), cipher: cipher).records
  }
  return records
}

/// `MediaFileSource → FrameDecoder(video, audio) → collectors` over `file` on a thread executor, the
/// decoders' damaged packets resumed after (`FrameDecoder.isDamagedPacket`): the frames and format
/// changes collected, and how many packets were damaged. Any other failure is an issue of the test.
func decodeFile(_ file: URL, start: MediaTime? = nil, threads: Int = FrameDecoder.defaultThreads) throws -> (
  video: [DecodedFrame], audio: [DecodedFrame], changes: Int, damaged: Int
) {
  let executor = ThreadExecutor(name: "test.file")
  defer { executor.shutdown() }
  let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
  let source = start.map { MediaFileSource(path: file.path, startTime: $0) } ?? MediaFileSource(path: file.path)
  let videoDecoder = try FrameDecoder(track: TrackID(.video, channel: 0), threads: threads)
  let audioDecoder = try FrameDecoder(track: TrackID(.audio, channel: 1), threads: threads)
  let video = FrameCollector(name: "video")
  let audio = FrameCollector(name: "audio")
  pipeline.connect(source, to: videoDecoder)
  pipeline.connect(source, to: audioDecoder)
  pipeline.connect(videoDecoder, to: video)
  pipeline.connect(audioDecoder, to: audio)
  let decoders: Set = [ObjectIdentifier(videoDecoder), ObjectIdentifier(audioDecoder)]
  let damaged = Locked(0)
  pipeline.errorHandler = { failure in
    guard FrameDecoder.isDamagedPacket(failure, from: decoders) else { return .stopPipeline }
    damaged.withLock { $0 += 1 }
    return .resume
  }
  let failures = try pipeline.runToCompletion().failures
  #expect(failures.allSatisfy { FrameDecoder.isDamagedPacket($0, from: decoders) }, "\(failures)")
  return (video.frames, audio.frames, video.formatChanges.count, damaged.withLock { $0 })
}
