import CloudServer
import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

let secret = "test-secret"

/// Transfers that retry quickly: the tests inject failures on loopback.
let fastPolicy: TransferPolicy = {
  var policy = TransferPolicy()
  // Generous stall and deadline: under the sanitizers the in-process server takes seconds to sign a
  // listing of 10,001 objects before it sends a byte.
  policy.connectTimeout = .seconds(10)
  policy.stallTimeout = .seconds(60)
  policy.deadline = .seconds(120)
  policy.backoff = .milliseconds(5)
  policy.maximumBackoff = .milliseconds(20)
  return policy
}()

/// A synthetic library served by a ``ReferenceServer`` on a free loopback port, stopped on release.
final class ServedLibrary: @unchecked Sendable {  // the directory is only removed in deinit
  let directory: TemporaryDirectory
  let server: ReferenceServer
  let service: CloudService
  let deviceId: String
  let log = RequestLog()

  /// `seconds` of the small test recording (3 s objects), served with `faults`.
  // URLs live an hour: on two cores under the thread sanitizer an async test may wait minutes for the
  // cooperative pool between its listing and its fetch (a 300 s URL expired there once: urlRefused).
  convenience init(
    seconds: Int = 12, faults: ServerFaults = ServerFaults(), urlLifetime: Int64 = 3600,
    uploads: UploadLimits = UploadLimits(), now: (@Sendable () -> Int64)? = nil
  ) throws {
    let directory = try TemporaryDirectory("tipipe-cloud")
    try LibrarySynthesizer(options: smallOptions(seconds: seconds)).write(to: directory.url)
    try self.init(directory: directory, faults: faults, urlLifetime: urlLifetime, uploads: uploads, now: now)
  }

  /// Serves the library already in `directory`.
  init(
    directory: TemporaryDirectory, faults: ServerFaults = ServerFaults(), urlLifetime: Int64 = 3600,
    uploads: UploadLimits = UploadLimits(), objectHosts: Set<String> = [], now: (@Sendable () -> Int64)? = nil
  ) throws {
    self.directory = directory
    deviceId = try RecordingIndex.load(library: directory.url).deviceId
    var configuration = ServerConfiguration(root: directory.url, secret: secret)
    configuration.port = 0
    configuration.faults = faults
    configuration.urlLifetimeSeconds = urlLifetime
    configuration.uploads = uploads
    configuration.objectHosts = objectHosts
    if let now { configuration.now = now }
    let log = self.log
    configuration.log = { line in log.append(line) }
    server = try ReferenceServer(configuration)
    service = CloudService(endpoint: URL(string: server.endpoint)!, policy: fastPolicy)
  }

  /// A token for the library's device, valid for an hour.
  var token: String { CloudToken(deviceId: deviceId, expires: now() + 3600).signed(secret: secret) }

  var library: URL { directory.url }

  /// Logged requests whose line starts with `prefix` (`GET /v1/recordings`, `GET /v1/objects/`).
  func requests(_ prefix: String) -> [String] { log.lines.filter { $0.hasPrefix(prefix) } }

  deinit { server.stop() }
}

/// The server's request lines, in order.
final class RequestLog: @unchecked Sendable {
  private let condition = NSCondition()
  private var storage: [String] = []

  func append(_ line: String) {
    condition.withLock {
      storage.append(line)
      condition.broadcast()
    }
  }

  var lines: [String] { condition.withLock { storage } }

  /// Blocks until the server has answered a request whose line starts with `prefix` (its headers are
  /// sent; a slow body may still be on its way).
  func waitForLine(startingWith prefix: String) throws {
    let deadline = Date(timeIntervalSinceNow: Double(testDeadline.components.seconds))
    try condition.withLock {
      while !storage.contains(where: { $0.hasPrefix(prefix) }) {
        guard condition.wait(until: deadline) else { throw WaitTimedOut("a request line starting with \(prefix)") }
      }
    }
  }
}

/// Runs a completion-form call and blocks until its one result (for tests that must not depend on the
/// cooperative pool).
func blockingWait<Value: Sendable>(_ start: (@escaping @Sendable (Value) -> Void) -> ServiceRequest) throws -> Value {
  let done = DispatchSemaphore(value: 0)
  let box = Locked<Value?>(nil)
  _ = start { value in
    box.withLock { $0 = value }
    done.signal()
  }
  try done.wait(for: "a service call's completion")
  return box.withLock { $0! }
}

func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

/// Waits for a completion-form call's one result.
func wait<Value: Sendable>(
  _ start: (@escaping @Sendable (Value) -> Void) -> ServiceRequest
) async -> Value {
  await withCheckedContinuation { continuation in
    _ = start { continuation.resume(returning: $0) }
  }
}

/// A library directory whose index lists `ranges` (milliseconds) as objects that do not exist: enough
/// for listing queries.
func indexOnlyLibrary(_ ranges: [(Int64, Int64)], device: String = "cam-q") throws -> TemporaryDirectory {
  let directory = try TemporaryDirectory("tipipe-listing")
  let segments = ranges.enumerated().map { position, range in
    RecordingIndex.Segment(
      id: "s\(position)", startMs: range.0, endMs: range.1, url: "objects/s\(position).tseg", size: 1,
      sha256: String(repeating: "0", count: 64), key: nil, tracks: [])
  }
  try RecordingIndex(deviceId: device, segments: segments).encoded().write(
    to: directory.url.appendingPathComponent("index.json"))
  return directory
}

/// Exports `range` of the recordings behind `source` and waits for the result.
func export<Source: SourceNode>(_ source: Source, range: MediaRange, to output: URL, audio: Bool = true) throws
  -> ExportResult where Source.Output == FetchedObject
{
  let job = try ExportJob(
    request: .init(
      range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: audio ? TrackID(.audio, channel: 1) : nil,
      output: output),
    source: source, completion: { _ in })
  guard let result = job.waitForResult(timeout: testDeadline) else { throw WaitTimedOut("the export's result") }
  return result
}

func span(_ from: Int64, _ to: Int64) -> MediaRange {
  MediaRange(startMilliseconds: recordingStart + from, endMilliseconds: recordingStart + to)
}

/// The library the HLS and player tests play, served: 30 s in 5-second objects, a keyframe every 3 s,
/// nothing recorded from 12 s to 18 s, AAC audio on channel 1, encrypted (the server decrypts it itself);
/// and where it starts.
func servedLibraryWithAGap(codec: Codec = .h264) throws -> (ServedLibrary, Int64) {
  let directory = try TemporaryDirectory("tipipe-stream")
  var options = smallOptions(seconds: 30)
  options.videoCodec = codec
  options.segmentSeconds = 5
  options.gop = 75
  options.gaps = [(offset: 12, length: 6)]
  options.encrypt = true
  try LibrarySynthesizer(options: options).write(to: directory.url)
  return (try ServedLibrary(directory: directory), options.startMilliseconds)
}

/// A served library whose camera changes its picture size inside one run of objects: 20 s in 5-second
/// objects, 320x240 until `offset` seconds and 160x120 after (same codec: the listing's tracks do not
/// tell) — at an object's start, or inside one — AAC on channel 1; and where it starts.
func servedLibraryWithAResize(at offset: Int = 10, insideAnObject: Bool = false) throws -> (ServedLibrary, Int64) {
  let directory = try TemporaryDirectory("tipipe-stream-resize")
  var options = smallOptions(seconds: 20)
  options.segmentSeconds = 5
  options.videoChanges = [
    .init(offsetSeconds: offset, codec: .h264, width: 160, height: 120, startsObject: !insideAnObject)
  ]
  try LibrarySynthesizer(options: options).write(to: directory.url)
  return (try ServedLibrary(directory: directory), options.startMilliseconds)
}
