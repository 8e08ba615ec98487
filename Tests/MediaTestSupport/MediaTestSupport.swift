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
