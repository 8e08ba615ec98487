import Dispatch
import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph

// Decode throughput through the graph against ffmpeg on the same media, and the verify+decrypt+demux
// rate alone. Usage:
//   DecodeBenchmark synth DIR WxH SECONDS [--encrypt]     write a library and DIR/video.h264 (same frames)
//   DecodeBenchmark decode DIR THREADS                    CloudSegmentSource (file://) → Verify → Demux → FrameDecoder → null
//   DecodeBenchmark demux DIR                             CloudSegmentSource (file://) → Verify → Demux → null
// Each run prints one line `frames=… bytes=… seconds=… maxrss_kb=…`.

final class NullSink<Item>: Node, @unchecked Sendable {
  typealias Input = Item
  typealias Output = Never
  var count = 0
  var bytes = 0
  let weigh: (Item) -> Int
  init(weigh: @escaping (Item) -> Int) { self.weigh = weigh }
  func process(_ input: Item, context: NodeContext<Never>) throws {
    count += 1
    bytes += weigh(input)
  }
}

func fullRange(_ directory: URL) throws -> MediaRange {
  let index = try RecordingIndex.decode(try Data(contentsOf: directory.appendingPathComponent("index.json")))
  return MediaRange(startMilliseconds: index.segments.first!.startMs, endMilliseconds: index.segments.last!.endMs)
}

func runToEnd(_ pipeline: Pipeline) throws {
  let failures = try pipeline.runToCompletion().failures
  for failure in failures { FileHandle.standardError.write(Data("failure: \(failure)\n".utf8)) }
  if !failures.isEmpty { exit(1) }
}

func maxRSSKilobytes() -> Int {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return usage.ru_maxrss
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
  FileHandle.standardError.write(Data("usage: DecodeBenchmark synth|decode|demux DIR …\n".utf8))
  exit(2)
}
let directory = URL(fileURLWithPath: arguments[2])
let executor = ThreadExecutor(name: "bench.decode")
let began = DispatchTime.now().uptimeNanoseconds
var frames = 0
var bytes = 0

switch arguments[1] {
case "synth":
  var options = LibrarySynthesizer.Options()
  let size = arguments[3].split(separator: "x").compactMap { Int($0) }
  (options.width, options.height) = (size[0], size[1])
  options.durationSeconds = Int(arguments[4])!
  options.encrypt = arguments.contains("--encrypt")
  let summary = try LibrarySynthesizer(options: options).write(to: directory)
  // The same access units as one Annex B elementary stream, for ffmpeg.
  let elementary = directory.appendingPathComponent("video.h264").path
  guard FileManager.default.createFile(atPath: elementary, contents: nil),
    let output = FileHandle(forWritingAtPath: elementary)
  else { throw MediaError(.writeFailed, "cannot create \(elementary)") }
  let cipher = try AES128CBC()
  for segment in summary.index.segments {
    let object = try Data(contentsOf: directory.appendingPathComponent(segment.url))
    let parsed = try SegmentReader.parse(object, key: try segment.keyBytes(), cipher: cipher)
    for record in parsed.records where record.track.kind == .video { output.write(record.payload) }
  }
  try output.close()
  frames = summary.videoFrames.count
case "extend":
  // extend DIR BASE MINUTES: a long library made of BASE's one-minute recording repeated, each copy
  // re-timed and re-encrypted (real media, cheap to make). Splits objects into 10 s pieces.
  let base = URL(fileURLWithPath: arguments[3])
  let minutes = Int(arguments[4])!
  let baseIndex = try RecordingIndex.decode(try Data(contentsOf: base.appendingPathComponent("index.json")))
  let cipher = try AES128CBC()
  var records: [SegmentRecord] = []
  for segment in baseIndex.segments {
    let object = try Data(contentsOf: base.appendingPathComponent(segment.url))
    records += try SegmentReader.parse(object, key: try segment.keyBytes(), cipher: cipher).records
  }
  let baseStart = baseIndex.segments.first!.startMs
  let span = baseIndex.segments.last!.endMs - baseStart
  try FileManager.default.createDirectory(
    at: directory.appendingPathComponent("objects"), withIntermediateDirectories: true)
  var segments: [RecordingIndex.Segment] = []
  for minute in 0..<minutes {
    let shift = Int64(minute) * span
    for piece in 0..<Int(span / 10_000) {
      let pieceStart = baseStart + Int64(piece) * 10_000
      let pieceRecords = records.filter {
        $0.timestampMilliseconds >= pieceStart && $0.timestampMilliseconds < pieceStart + 10_000
      }.map { record -> SegmentRecord in
        var shifted = record
        shifted.timestampMilliseconds += shift
        return shifted
      }
      let key: [UInt8]? = arguments.contains("--plain") ? nil : (0..<16).map { _ in UInt8.random(in: 0...255) }
      let range = MediaRange(startMilliseconds: pieceStart + shift, endMilliseconds: pieceStart + shift + 10_000)
      let object = try SegmentWriter.object(records: pieceRecords, range: range, key: key)
      let id = String(range.start.milliseconds)
      try object.write(to: directory.appendingPathComponent("objects/\(id).tseg"))
      segments.append(
        RecordingIndex.Segment(
          id: id, startMs: range.start.milliseconds, endMs: range.end.milliseconds, url: "objects/\(id).tseg",
          size: object.count, sha256: SHA256Digest.hexHash(object),
          key: key.map { $0.map { String(format: "%02x", $0) }.joined() }, tracks: []))
      frames += pieceRecords.filter { $0.track.kind == .video }.count
    }
  }
  try RecordingIndex(deviceId: "bench", segments: segments).encoded().write(
    to: directory.appendingPathComponent("index.json"))
case "elementary":
  // elementary DIR: the library's video and audio records as video.h264 and audio.aac (for ffmpeg).
  let index = try RecordingIndex.decode(try Data(contentsOf: directory.appendingPathComponent("index.json")))
  let cipher = try AES128CBC()
  var handles: [TrackKind: FileHandle] = [:]
  for (kind, name) in [(TrackKind.video, "video.h264"), (.audio, "audio.aac")] {
    let path = directory.appendingPathComponent(name).path
    guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path)
    else { throw MediaError(.writeFailed, "cannot create \(path)") }
    handles[kind] = handle
  }
  for segment in index.segments {
    let object = try Data(contentsOf: directory.appendingPathComponent(segment.url))
    for record in try SegmentReader.parse(object, key: try segment.keyBytes(), cipher: cipher).records {
      handles[record.track.kind]?.write(record.payload)
      if record.track.kind == .video { frames += 1 }
    }
  }
  for handle in handles.values { try handle.close() }
case "decode":
  let threads = Int(arguments[3]) ?? 1
  let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
  let source = CloudSegmentSource(directory: directory, range: try fullRange(directory))
  let verifier = try SegmentVerifier()
  let demuxer = SegmentDemuxer()
  let decoder = try FrameDecoder(track: TrackID(.video, channel: 0), threads: threads)
  let sink = NullSink<DecodedFrame> { _ in 0 }
  pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
  pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
  pipeline.connect(demuxer, to: decoder, limits: EdgeLimits(items: 64))
  pipeline.connect(decoder, to: sink, limits: EdgeLimits(items: 4))
  try runToEnd(pipeline)
  frames = sink.count
case "demux":
  let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
  let source = CloudSegmentSource(directory: directory, range: try fullRange(directory))
  let verifier = try SegmentVerifier()
  let demuxer = SegmentDemuxer()
  let sink = NullSink<EncodedPacket> { $0.data.count }
  pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
  pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
  pipeline.connect(demuxer, to: sink, limits: EdgeLimits(items: 256))
  try runToEnd(pipeline)
  for node in pipeline.statistics().nodes {
    FileHandle.standardError.write(Data("\(node.name): busy \(node.busyNanoseconds / 1_000_000) ms\n".utf8))
  }
  frames = sink.count
  let index = try RecordingIndex.decode(try Data(contentsOf: directory.appendingPathComponent("index.json")))
  bytes = index.segments.reduce(0) { $0 + $1.size }
default:
  FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
  exit(2)
}
executor.shutdown()
let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
print("frames=\(frames) bytes=\(bytes) seconds=\(String(format: "%.3f", seconds)) maxrss_kb=\(maxRSSKilobytes())")
