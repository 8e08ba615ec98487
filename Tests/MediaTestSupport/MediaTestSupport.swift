import Dispatch
import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit

/// A fresh temporary directory, removed when the object is released.
public final class TemporaryDirectory {
  /// The directory.
  public let url: URL

  /// Creates `<tmp>/<name>-<uuid>`.
  public init(_ name: String = "tipipe-test") throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(at: url) }
}

/// The first instant of the test recordings.
public let recordingStart: Int64 = 1_795_996_800_000

/// Small, fast synthetic recordings: 320x240, 25 fps, 2 s GOPs, 3 s objects (GOPs span objects), AAC.
public func smallOptions(seconds: Int = 9) -> LibrarySynthesizer.Options {
  var options = LibrarySynthesizer.Options()
  options.startMilliseconds = recordingStart
  options.durationSeconds = seconds
  options.segmentSeconds = 3
  options.width = 320
  options.height = 240
  options.fps = 25
  options.gop = 50
  // Fixed keys and IVs: a failure reproduces run after run.
  options.seed = 0x7469_7069_7065
  return options
}

/// Runs a command and returns its standard output (standard error is discarded).
public func run(_ executable: String, _ arguments: [String]) throws -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let output = Pipe()
  process.standardOutput = output
  process.standardError = FileHandle.nullDevice
  try process.run()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return String(decoding: data, as: UTF8.self)
}

/// Starts `pipeline` and waits until every sink has ended or it stopped; returns the failures its error
/// handler saw (each one stops the pipeline). Read the sinks only after this returns.
public func runToEnd(_ pipeline: Pipeline) throws -> [NodeFailure] {
  let failures = LockedArray<NodeFailure>()
  pipeline.errorHandler = { failure in
    failures.append(failure)
    return .stopPipeline
  }
  let done = DispatchSemaphore(value: 0)
  pipeline.onEndOfStream = { done.signal() }
  pipeline.onStop = { done.signal() }
  try pipeline.start()
  done.wait()
  pipeline.stop()
  return failures.values
}

/// Writes at `destination` a library made of `copies` back-to-back copies of the library at `source`
/// (each re-timed by the source's span): long recordings for tests that need a slow export, without
/// encoding them.
public func repeatLibrary(_ source: URL, copies: Int, into destination: URL) throws {
  let index = try RecordingIndex.decode(try Data(contentsOf: source.appendingPathComponent("index.json")))
  guard let first = index.segments.first, let last = index.segments.last else { return }
  let span = last.endMs - first.startMs
  let cipher = try AES128CBC()
  try FileManager.default.createDirectory(
    at: destination.appendingPathComponent("objects"), withIntermediateDirectories: true)
  var segments: [RecordingIndex.Segment] = []
  for copy in 0..<copies {
    let shift = Int64(copy) * span
    for segment in index.segments {
      let object = try Data(contentsOf: source.appendingPathComponent(segment.url))
      let parsed = try SegmentReader.parse(object, key: try segment.keyBytes(), cipher: cipher)
      let records = parsed.records.map { record -> SegmentRecord in
        var shifted = record
        shifted.timestampMilliseconds += shift
        return shifted
      }
      let range = MediaRange(
        startMilliseconds: segment.startMs + shift, endMilliseconds: segment.endMs + shift)
      let bytes = try SegmentWriter.object(records: records, range: range)
      let id = String(range.start.milliseconds)
      try bytes.write(to: destination.appendingPathComponent("objects/\(id).tseg"))
      var entry = segment
      entry.id = id
      entry.startMs = range.start.milliseconds
      entry.endMs = range.end.milliseconds
      entry.url = "objects/\(id).tseg"
      entry.size = bytes.count
      entry.sha256 = SHA256Digest.hexHash(bytes)
      entry.key = nil
      segments.append(entry)
    }
  }
  try RecordingIndex(deviceId: index.deviceId, segments: segments).encoded().write(
    to: destination.appendingPathComponent("index.json"))
}
