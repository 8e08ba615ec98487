import Dispatch
import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph
import PipelineTestKit
import ReplayTestKit
import TiCloudStorage

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

/// The first instant of the test recordings (ReplayTestKit's fixtures).
public let recordingStart: Int64 = ReplayFixtures.recordingStart

/// Small, fast synthetic recordings: 320x240, 25 fps, 2 s GOPs, 3 s objects (GOPs span objects), AAC.
public func smallOptions(seconds: Int = 9) -> LibrarySynthesizer.Options { ReplayFixtures.options(seconds: seconds) }

/// Runs a command and returns its standard output as text (standard error is discarded).
public func run(_ executable: String, _ arguments: [String]) throws -> String {
  String(decoding: try runForData(executable, arguments), as: UTF8.self)
}

/// Runs a command and returns its standard output's bytes (standard error is discarded).
public func runForData(_ executable: String, _ arguments: [String]) throws -> Data {
  try ChildProcess(executable, arguments, captureErrors: false).finish().output
}

/// Runs a command and returns its standard error as text (standard output is discarded): what a
/// decoder or muxer complained of.
public func runForStandardError(_ executable: String, _ arguments: [String]) throws -> String {
  String(decoding: try ChildProcess(executable, arguments, captureOutput: false).finish().errors, as: UTF8.self)
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

/// How many cases a fuzz test runs: a deterministic slice in CI, millions from `scripts/fuzz.sh`
/// (which sets `TIPIPE_FUZZ_CASES`).
public func fuzzCases(_ slice: Int) -> Int {
  ProcessInfo.processInfo.environment["TIPIPE_FUZZ_CASES"].flatMap(Int.init) ?? slice
}

/// The seed of a fuzz run (`TIPIPE_FUZZ_SEED`), so that a long run can be varied and any failure
/// replayed.
public func fuzzSeed(_ fallback: UInt64) -> UInt64 {
  ProcessInfo.processInfo.environment["TIPIPE_FUZZ_SEED"].flatMap { UInt64($0) } ?? fallback
}

/// Mutates valid records the way a broken or hostile writer would, then re-encodes them with correct
/// CRCs, sizes and encryption, so the checks past the header (records, ADTS, codecs, timestamps, the
/// demuxer's parameter-set probe) are reached.
public struct RecordMutator {
  /// The source of every choice.
  public var generator: SeededGenerator
  /// The valid records mutated.
  public let records: [SegmentRecord]
  /// Their object's range.
  public let range: MediaRange

  /// A mutator of `records` (an object covering `range`), deterministic for a seed.
  public init(seed: UInt64, records: [SegmentRecord], range: MediaRange) {
    generator = SeededGenerator(seed: seed)
    self.records = records
    self.range = range
  }

  /// One of `values`, chosen by the generator.
  public mutating func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
  /// True `percent` times in a hundred.
  public mutating func chance(_ percent: UInt64) -> Bool { generator.next() % 100 < percent }

  mutating func time() -> Int64 {
    let start = range.start.milliseconds
    let end = range.end.milliseconds
    return pick([
      Int64.min, Int64.max, Int64.min + 1, Int64.max - 1, start - 1, start, end - 1, end, end + 1, 0, -1,
      start + Int64(generator.next() % UInt64(end - start)), 4_611_686_018_427_387, -4_611_686_018_427_388,
    ])
  }

  /// One mutated object: its bytes and the key it was encrypted with, if any.
  public mutating func object() throws -> (Data, [UInt8]?) {
    var records = self.records
    var range = self.range
    var recordCountDelta = 0
    for _ in 0..<(1 + generator.next() % 3) {
      guard !records.isEmpty else { break }
      let index = Int(generator.next() % UInt64(records.count))
      switch generator.next() % 12 {
      case 0: records[index].timestampMilliseconds = time()
      case 1: records[index].codec = pick([.h264, .h265, .aac, .g711a, .g711u])
      case 2: records[index].track = TrackID(pick([.video, .audio]), channel: UInt8(generator.next() & 0xFF))
      case 3: records[index].isKeyframe.toggle()
      case 4:
        records[index].sampleRate = pick([0, 1, 8000, 16000, 44100, 48000, 96000, Int(UInt32.max)])
        records[index].channels = pick([0, 1, 2, 3, 255])
      case 5:
        let payload = records[index].payload
        records[index].payload = pick([
          Data(), payload.prefix(Int(generator.next() % UInt64(payload.count + 1))),
          Data((0..<Int(generator.next() % 64)).map { _ in UInt8(generator.next() & 0xFF) }),
          records[Int(generator.next() % UInt64(records.count))].payload,
        ])
      case 6:
        // Damage a byte of the payload's head: an ADTS field, a start code, a NAL header, an SPS.
        var payload = records[index].payload
        if !payload.isEmpty {
          let at = payload.startIndex + Int(generator.next() % UInt64(min(payload.count, 48)))
          payload[at] ^= UInt8(1 << (generator.next() % 8))
          records[index].payload = Data(payload)
        }
      case 7: records.swapAt(index, Int(generator.next() % UInt64(records.count)))
      case 8: records.insert(records[index], at: index)
      case 9: records.remove(at: index)
      case 10:
        let cut = range.start.milliseconds + Int64(generator.next() % UInt64(range.duration.milliseconds))
        range =
          chance(50)
          ? MediaRange(startMilliseconds: cut, endMilliseconds: range.end.milliseconds)
          : MediaRange(
            startMilliseconds: range.start.milliseconds, endMilliseconds: max(cut, range.start.milliseconds + 1))
      default: recordCountDelta = pick([-1, 1, Int(UInt32.max)])
      }
    }
    let key: [UInt8]? = chance(30) ? (0..<16).map { _ in UInt8(generator.next() & 0xFF) } : nil
    var object = try SegmentWriter.object(
      records: records, range: range, key: key,
      iv: key == nil ? nil : (0..<16).map { _ in UInt8(generator.next() & 0xFF) })
    if recordCountDelta != 0 {
      var header = try SegmentReader.header(of: object)
      header.recordCount = UInt32(truncatingIfNeeded: Int(header.recordCount) + recordCountDelta)
      object = header.encoded + object.dropFirst(SegmentHeader.size)
    }
    return (object, key)
  }
}

/// What Chromium made of a media file played to its end in a `<video>` element (headless, muted, 4×).
public struct BrowserPlayback: Sendable, CustomStringConvertible {
  /// The page saw `ended`.
  public var ended: Bool
  /// `getVideoPlaybackQuality()`: frames decoded (shown or dropped for lateness) and frames corrupted.
  public var frames: Int
  /// Frames the decoder reported corrupted.
  public var corrupted: Int
  /// The element's duration, in seconds.
  public var duration: Double
  /// The element's error (code and message), when playback failed.
  public var error: String?
  /// What the page logged, as Chromium printed it.
  public var line: String

  /// The line the page logged.
  public var description: String { line }
}

/// Plays `file` in headless Chromium (`/usr/bin/chromium`, installed by scripts/setup.sh) to its end
/// and reports what the page saw; the browser quits when the video ends or fails (a 120 s cap is only a
/// guard against a hang, never a measurement).
public func playInChromium(_ file: URL) throws -> BrowserPlayback {
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-browser-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: directory) }
  let page = directory.appendingPathComponent("play.html")
  try """
  <!doctype html><html><body><video id=v muted playsinline></video><script>
  const v = document.getElementById('v');
  const done = () => setTimeout(() => window.close(), 50);
  v.onended = () => {
    const q = v.getVideoPlaybackQuality();
    console.log(`tipipe-playback ended frames=${q.totalVideoFrames} corrupted=${q.corruptedVideoFrames} duration=${v.duration}`);
    done();
  };
  v.onerror = () => { console.log(`tipipe-playback error ${v.error.code} ${v.error.message}`); done(); };
  v.src = decodeURIComponent(location.hash.slice(1));
  v.playbackRate = 4;
  v.play().catch(e => { console.log(`tipipe-playback error play ${e}`); done(); });
  </script></body></html>
  """.write(to: page, atomically: true, encoding: .utf8)
  let target = file.absoluteURL.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
  let lines = try chromiumConsole("\(page.absoluteString)#\(target)", marker: "tipipe-playback")
  guard let line = lines.first else {
    return BrowserPlayback(
      ended: false, frames: 0, corrupted: 0, duration: 0, error: "no answer from the page", line: "")
  }
  let text = String(line)
  func value(_ key: String) -> String? {
    guard let range = text.range(of: "\(key)=") else { return nil }
    return String(text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "\"" })
  }
  let ended = text.contains("tipipe-playback ended")
  return BrowserPlayback(
    ended: ended, frames: Int(value("frames") ?? "") ?? -1, corrupted: Int(value("corrupted") ?? "") ?? -1,
    duration: Double(value("duration") ?? "") ?? -1,
    error: ended ? nil : String(text[text.range(of: "tipipe-playback ")!.upperBound...]), line: text)
}

/// Opens `url` in headless Chromium (`/usr/bin/chromium`) until the page closes its window, and returns
/// the lines the page logged that contain `marker`, from the text after it. A 120 s cap is a guard
/// against a hang, never a measurement.
public func chromiumConsole(_ url: String, marker: String) throws -> [String] {
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-chromium-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: directory) }
  let output = try runForStandardError(
    "/usr/bin/timeout",
    [
      "120", "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio",
      "--autoplay-policy=no-user-gesture-required", "--disable-gpu-watchdog",
      "--enable-logging=stderr", "--v=0",
      "--user-data-dir=\(directory.appendingPathComponent("profile").path)", url,
    ])
  return output.split(separator: "\n").compactMap { line in
    guard let range = line.range(of: marker) else { return nil }
    // Chromium quotes the message and adds its source: keep the message.
    return String(line[range.lowerBound...].prefix { $0 != "\"" })
  }
}

/// How long any test waits for a completion before it fails with what it waited for: long enough for a
/// loaded 2-core machine under the thread sanitizer, short enough that a lost completion fails the run
/// instead of hanging it. A deadline, not a measure: no test asserts how fast anything was.
public let testDeadline: Duration = .seconds(300)

/// A wait that reached ``testDeadline``.
public struct WaitTimedOut: Error, CustomStringConvertible {
  /// What was awaited.
  public let what: String
  /// Creates the error for `what`.
  public init(_ what: String) { self.what = what }
  /// Says what never came.
  public var description: String { "waited \(testDeadline) for \(what)" }
}

/// Polls `condition` (every millisecond) until it holds; throws ``WaitTimedOut`` naming `what` once
/// ``testDeadline`` has passed. For a state another thread changes, where no signal exists to wait for.
public func waitUntil(_ what: String, _ condition: () -> Bool) throws {
  let deadline = ContinuousClock.now + testDeadline
  while !condition() {
    guard ContinuousClock.now < deadline else { throw WaitTimedOut(what) }
    usleep(1_000)
  }
}

/// Yields to other tasks until `condition` holds; throws ``WaitTimedOut`` naming `what` once
/// ``testDeadline`` has passed.
public func yieldUntil(_ what: String, _ condition: () -> Bool) async throws {
  let deadline = ContinuousClock.now + testDeadline
  while !condition() {
    guard ContinuousClock.now < deadline else { throw WaitTimedOut(what) }
    await Task.yield()
  }
}

extension DispatchSemaphore {
  /// Waits for a signal until ``testDeadline``; throws ``WaitTimedOut`` naming `what` after it.
  public func wait(for what: String) throws {
    let seconds = Double(testDeadline.components.seconds)
    guard wait(timeout: .now() + seconds) == .success else { throw WaitTimedOut(what) }
  }
}

extension ReplayRecorder {
  /// Finishes the recording (`playedToTheEnd`: its play ended, not stopped) and waits for its result until
  /// ``testDeadline``.
  public func finishWithinDeadline(playedToTheEnd: Bool) throws -> Result<Int64, MediaError> {
    let result = Locked<Result<Int64, MediaError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    finish(playedToTheEnd: playedToTheEnd) { outcome in
      result.withLock { $0 = outcome }
      done.signal()
    }
    try done.wait(for: "the recorder's result")
    guard let outcome = result.withLock({ $0 }) else { throw WaitTimedOut("the recorder's result") }
    return outcome
  }
}

extension ExportJob {
  /// The export's result, waited for until ``testDeadline``.
  public func resultWithinDeadline() throws -> ExportResult {
    guard let result = waitForResult(timeout: testDeadline) else { throw WaitTimedOut("the export's result") }
    return result
  }
}

/// Writes a second video channel into `library`'s objects, beside what they hold: channel 2 at
/// 160×120 (no audio, its own seed) of a library made from `options` — the same objects' times — whose
/// records are merged into each object in time order (T9: a task records one video channel).
public func addSecondVideoChannel(to library: URL, options: LibrarySynthesizer.Options) throws {
  let other = try TemporaryDirectory("tipipe-channel-two")
  var options = options
  options.videoChannel = 2
  options.width = 160
  options.height = 120
  options.audioCodec = nil
  options.seed = 0x2222
  try LibrarySynthesizer(options: options).write(to: other.url)
  let cipher = try AES128CBC()
  let segments = try RecordingIndex.load(library: other.url).segments.sorted { $0.startMs < $1.startMs }
  for (position, segment) in segments.enumerated() {
    let extra = try SegmentReader.parse(
      Data(contentsOf: segment.fileURL(in: other.url)), key: segment.keyBytes(), cipher: cipher
    ).records
    try LibraryFaults.rewriteRecords(segment: position, in: library) { records in
      (records + extra).sorted {
        ($0.timestampMilliseconds, $0.track.channel) < ($1.timestampMilliseconds, $1.track.channel)
      }
    }
  }
}

/// What ffprobe finds in an MP4: its duration (s), its first video stream's packets, and each stream's
/// codec name and kind (`video`, `audio`), in stream order.
public func probeRecording(_ path: String) throws -> (
  duration: Double, frames: Int, codecs: [String], kinds: [String]
) {
  let format = try run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
  let frames = try run(
    "/usr/bin/ffprobe",
    [
      "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of",
      "csv=p=0", path,
    ])
  let streams = try run(
    "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,codec_type", "-of", "csv=p=0", path]
  )
  .split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
  return (
    Double(format.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
    Int(frames.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
    streams.compactMap(\.first), streams.compactMap { $0.count > 1 ? $0[1] : nil }
  )
}

/// Copies the media file `file` to `turned` with ffmpeg's `rotate` tag of `degrees` (a stream copy):
/// the same pictures, shown turned as a phone's recording is.
public func turnedCopy(of file: URL, degrees: Int, to turned: URL) throws {
  _ = try run(
    "/usr/bin/ffmpeg",
    ["-v", "error", "-y", "-i", file.path, "-c", "copy", "-metadata:s:v:0", "rotate=\(degrees)", turned.path])
}

/// Copies the media file at `source` to `cut` from `seconds` on without re-encoding (`ffmpeg -ss S -i
/// source -c copy`), as people trim a file: the pictures from the keyframe before `seconds` are kept for
/// their references and hidden by the MP4's edit list (libavformat gives them negative times and flags
/// them to discard).
public func cutWithoutReencoding(_ source: String, from seconds: Double = 1.5, to cut: String) throws {
  _ = try run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-ss", "\(seconds)", "-i", source, "-c", "copy", cut])
}
