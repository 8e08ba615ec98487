import Dispatch
import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing
import TiCloudStorage

func range(_ from: Int64, _ to: Int64) -> MediaRange {
  MediaRange(startMilliseconds: recordingStart + from, endMilliseconds: recordingStart + to)
}

func reportRange(_ from: Int64, _ to: Int64) -> ExportReport.Range {
  ExportReport.Range(startMs: recordingStart + from, endMs: recordingStart + to)
}

final class ExportObservations: @unchecked Sendable {
  private let lock = NSLock()
  private var _progress: [Double] = []
  private var _covered: [Int64] = []
  private var _gaps: [RecordingGap] = []
  func record(_ fraction: Double, _ covered: Int64) {
    lock.withLock {
      _progress.append(fraction); _covered.append(covered)
    }
  }
  func record(_ gap: RecordingGap) { lock.withLock { _gaps.append(gap) } }
  var progress: [Double] { lock.withLock { _progress } }
  var covered: [Int64] { lock.withLock { _covered } }
}

/// Runs an export of `library` and waits for its completion. `onProgress` may act on the job (cancel…).
func export(
  library: URL, range: MediaRange, audio: Bool = true, to output: URL, videoChannel: UInt8 = 0,
  audioChannel: UInt8 = 1, onProgress: (@Sendable (ExportJob, Double) -> Void)? = nil
) throws -> (ExportResult, ExportObservations) {
  let observations = ExportObservations()
  let box = JobBox()
  let job = try ExportJob(
    request: .init(
      range: range, videoTrack: TrackID(.video, channel: videoChannel),
      audioTrack: audio ? TrackID(.audio, channel: audioChannel) : nil,
      output: output),
    source: CloudSegmentSource(directory: library, range: range, prefetchBytes: 1 << 20),
    progress: { fraction, covered in
      observations.record(fraction, covered)
      if let job = box.job { onProgress?(job, fraction) }
    },
    gap: { observations.record($0) },
    completion: { _ in })
  box.job = job
  return (try job.resultWithinDeadline(), observations)
}

final class JobBox: @unchecked Sendable {
  private let lock = NSLock()
  private var _job: ExportJob?
  var job: ExportJob? {
    get { lock.withLock { _job } }
    set { lock.withLock { _job = newValue } }
  }
}

/// The independent judge's view of an MP4.
struct Probe {
  struct Stream: Decodable {
    var codec_name: String
    var codec_tag_string: String
    var width: Int?
    var height: Int?
    var sample_rate: String?
    var nb_read_frames: String?
  }
  var streams: [Stream]
  var duration: Double
  var videoPackets: [(pts: Double, key: Bool)]

  var video: Stream? { streams.first { $0.width != nil } }
  var audio: Stream? { streams.first { $0.sample_rate != nil } }

  init(_ file: URL) throws {
    struct Output: Decodable {
      struct Format: Decodable { var duration: String }
      var streams: [Stream]
      var format: Format
    }
    let json = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-count_frames", "-show_entries",
        "format=duration:stream=codec_name,codec_tag_string,width,height,sample_rate,nb_read_frames", "-of", "json",
        file.path,
      ])
    let output = try JSONDecoder().decode(Output.self, from: Data(json.utf8))
    streams = output.streams
    duration = Double(output.format.duration) ?? -1
    let packets = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0", file.path])
    videoPackets = packets.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: ",")
      guard fields.count >= 2, let pts = Double(fields[0]) else { return nil }
      return (pts, fields[1].hasPrefix("K"))
    }
  }
}

/// Checks what every exported file must satisfy, against the report.
func expectPlayable(
  _ result: ExportResult, width: Int = 320, height: Int = 240, audio: Bool = true, fps: Int = 25
) throws -> Probe {
  let file = try #require(result.file)
  let probe = try Probe(file)
  let covered = Double(result.report.coveredDurationMs) / 1000
  #expect(probe.video?.codec_name == "h264")
  #expect(probe.video?.width == width && probe.video?.height == height)
  #expect(abs(probe.duration - covered) <= 0.045, "duration \(probe.duration) vs covered \(covered)")
  #expect(probe.videoPackets.first?.key == true)
  #expect(probe.videoPackets.first?.pts == 0)
  let times = probe.videoPackets.map(\.pts)
  #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "video timestamps increase")
  #expect(Int(probe.video?.nb_read_frames ?? "") == probe.videoPackets.count)
  let expectedFrames = Double(result.report.coveredDurationMs) * Double(fps) / 1000
  #expect(abs(Double(probe.videoPackets.count) - expectedFrames) <= 1, "\(probe.videoPackets.count) frames")
  if audio { #expect(probe.audio?.codec_name == "aac") }
  // Segments are contiguous in the output and sum to the covered duration.
  var cursor: Int64 = 0
  for segment in result.report.segments {
    #expect(segment.outputStartMs == cursor)
    #expect(segment.outputEndMs - segment.outputStartMs == segment.sourceRange.durationMs)
    cursor = segment.outputEndMs
  }
  #expect(cursor == result.report.coveredDurationMs)
  // An ordinary MP4 with its index at the front: no fragments left, `moov` before the media.
  let types = try topLevelBoxTypes(file)
  #expect(Array(types.prefix(2)) == ["ftyp", "moov"], "\(types.prefix(4))")
  #expect(!types.contains("moof") && !types.contains("mvex"))
  #expect(types.contains("mdat"))
  #expect(try hiddenBoxes(file).isEmpty, "a free box still holds a box a reader could recover")
  // A second judge that is not libavformat: GStreamer's qtdemux reads every frame, in order.
  let buffers = try qtdemuxVideoBuffers(file)
  #expect(buffers.count == probe.videoPackets.count, "qtdemux read \(buffers.count) frames")
  #expect(zip(buffers, probe.videoPackets).allSatisfy { abs($0 - $1.pts) < 0.0005 }, "qtdemux times")
  return probe
}

/// The top-level `free`/`skip` boxes of `file` whose payload starts like a box that a reader may recover
/// from it (GPAC re-reads a `free` holding `mfhd` as a `moof`): `moof`, `mfhd`, `traf`, `mfra`, `tfra`,
/// `mfro`, `moov`, `mdat`; and those that end with an `mfro` (it points back at an `mfra`). Their offsets.
func hiddenBoxes(_ file: URL) throws -> [Int] {
  let data = try Data(contentsOf: file)
  let recoverable: Set<String> = ["moof", "mfhd", "traf", "mfra", "tfra", "mfro", "moov", "mdat"]
  func type(at offset: Int) -> String { String(decoding: data[offset + 4..<offset + 8], as: UTF8.self) }
  var found: [Int] = []
  for box in try topLevelBoxes(data) where box.type == "free" || box.type == "skip" {
    let payload = box.offset + box.headerSize
    if payload + 8 <= min(data.count, box.offset + box.size), recoverable.contains(type(at: payload)) {
      found.append(box.offset)
    }
    let tail = box.offset + box.size - 16
    if box.size >= 24, tail + 8 <= data.count, type(at: tail) == "mfro" { found.append(tail) }
  }
  return found
}

/// An MP4's top-level boxes, in order: type, offset, size and header size (16 for a 64-bit size).
func topLevelBoxes(_ file: URL) throws -> [(type: String, offset: Int, size: Int, headerSize: Int)] {
  try topLevelBoxes(Data(contentsOf: file))
}

func topLevelBoxes(_ data: Data) throws -> [(type: String, offset: Int, size: Int, headerSize: Int)] {
  var boxes: [(type: String, offset: Int, size: Int, headerSize: Int)] = []
  var offset = 0
  while offset + 8 <= data.count {
    var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    var header = 8
    if size == 1, offset + 16 <= data.count {
      size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
      header = 16
    }
    guard size >= 8 else { break }
    boxes.append((String(decoding: data[offset + 4..<offset + 8], as: UTF8.self), offset, size, header))
    offset += size
  }
  return boxes
}

/// The types of an MP4's top-level boxes, in order.
func topLevelBoxTypes(_ file: URL) throws -> [String] { try topLevelBoxes(file).map(\.type) }
