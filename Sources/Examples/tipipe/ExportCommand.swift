import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe export` (`spec/cli.md`): a range of a library into one MP4, with the report as JSON.
enum ExportCommand {
  /// The report JSON of spec/cli.md: `file` always present (`null` when no MP4 was produced).
  struct Output<Report: Encodable>: Encodable {
    var code: Int32
    var file: String?
    var durationMs: Int64
    var report: Report

    enum CodingKeys: String, CodingKey {
      case code, file
      case durationMs = "duration_ms"
      case report
    }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(code, forKey: .code)
      try container.encode(file, forKey: .file)
      try container.encode(durationMs, forKey: .durationMs)
      try container.encode(report, forKey: .report)
    }

    /// Writes the report as pretty JSON to `path` (`-`: standard output). A report that cannot be
    /// written (the path became a directory or a link since the run began, the disk is full) fails the
    /// run with `fileWriteFailed` (exit 1, never the usage error's 2: the arguments were checked at the
    /// start), saying where the MP4 is: it is complete and kept.
    func write(to path: String) throws {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
      let json = try encoder.encode(self) + Data("\n".utf8)
      if path == "-" {
        if let error = StandardOutput.write(json) { fail(error) }
        return
      }
      do {
        try OutputFile.write(json, to: URL(fileURLWithPath: path))
      } catch {
        let written = file.map { "; the MP4 is complete at \($0)" } ?? ""
        throw TiError(.fileWriteFailed, "the report was not written\(written): \(TiError(error).message)", cause: error)
      }
    }
  }

  /// The human line after a successful export (stderr, on a terminal).
  static func wrote(_ file: String, covered: Int64, segments: Int, gaps: Int, complete: Bool) {
    StandardError.write(
      Data(
        ("wrote \(file): \(covered) ms covered in \(segments) segment(s), \(gaps) gap(s), complete: \(complete)\n")
          .utf8))
  }

  static let summary = "export [start, end) of a library to one MP4 (gaps cut out) with its report"
  static let usage = """
    usage: tipipe export --endpoint E [--token K] --start T --end T --video-channel N
                         [--audio-channel N] --out FILE.mp4 [--report FILE.json|-] [--quiet]
                         [--progress-lines] [--cache DIR] [--verbose]
           tipipe export --input FILE --start S [--end S] --out FILE.mp4 [--cut keyframe|exact]
                         [--report FILE.json|-] [--quiet] [--progress-lines] [--verbose]

    Exports [start, end) (at most 10 days) of the recordings at E (http(s)://… the cloud API, with
    --token; file:///DIR a local library) into one MP4 whose timeline cuts the gaps out, and writes
    the report (spec/cli.md) to --report (- for stdout). The MP4 and the report are written under
    temporary names and renamed into place when complete; --out and --report must not name a
    directory or each other. SIGINT, SIGTERM and SIGHUP cancel: no file is left behind.
    --progress-lines prints {"progress":F,"covered_ms":N} lines on stderr. Exit 0 when an MP4 was
    produced (complete or not), 1 when the export failed, 2 for a usage error. Runs through the SDK
    facade (TiCloudStorage.exportRecording, detailed overload, with the request's outputPath) with its
    work root in --cache DIR (default ~/.cache/tirtc).

    With --input, exports [S, E) of a media file (MP4, MOV, MKV, MPEG-TS, raw H.264/H.265/AAC): S and
    E are seconds from the file's start (12.5, 1:02.5, 01:00:00; `tipipe probe` lists its keyframes),
    --end defaults to the end of its video; its first video and audio tracks are kept. The export
    starts at the keyframe at or before S (--cut keyframe, the default) or exactly at S (--cut exact:
    the group of pictures holding S is re-encoded from S on, the rest copied), at the first picture
    when S is before it — the report's range from S all the same, the stretch before the picture a gap,
    unless it is at most 200 ms (an encoder's priming: the range from the picture); a warning says what
    sound alone is left out. A file cut without re-encoding, whose edit list hides the keyframe before
    S, is cut exactly there (a note says so). The report's times are milliseconds from the file's start.
    """

  /// The flags `export` (and `bench export`) take.
  static let flags: [String: FlagParser.Kind] = [
    "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--video-channel": .value,
    "--audio-channel": .value, "--out": .value, "--report": .value, "--quiet": .boolean,
    "--progress-lines": .boolean,
  ]

  /// The request the flags describe and where its recordings come from.
  static func request(from flags: FlagParser, cache: URL? = nil) throws -> (ExportJob.Request, Endpoint) {
    let endpoint = try Endpoint(flags)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    let videoChannel = try flags.integer("--video-channel", default: -1, range: 0...255)
    guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
    let audioChannel =
      flags.string("--audio-channel") == nil ? nil : try flags.integer("--audio-channel", default: 0, range: 0...255)
    let library = try flags.required("--endpoint")
    let out = try outputPath("--out", try flags.required("--out"), cache: cache, endpoint: library)
    if let reportPath = flags.string("--report"), reportPath != "-" {
      guard !OutputFile.sameFile(try outputPath("--report", reportPath, cache: cache, endpoint: library), out) else {
        throw UsageError(message: "--report and --out name the same file")
      }
    }
    guard start < end else {
      throw TiError(.invalidArgument, "--start must be before --end")
    }
    // Both times are within MediaTime.validMilliseconds (checked by the parser): no overflow here.
    guard end - start <= 864_000_000 else { throw TiError(.rangeTooLarge, "an export spans at most 10 days") }
    let request = ExportJob.Request(
      range: MediaRange(startMilliseconds: start, endMilliseconds: end),
      videoTrack: TrackID(.video, channel: UInt8(videoChannel)),
      audioTrack: audioChannel.map { TrackID(.audio, channel: UInt8($0)) }, output: out)
    return (request, endpoint)
  }

  static func run(_ arguments: [String]) throws -> Int32 {
    // A media file instead of a library.
    if arguments.contains("--input") { return try FileExportCommand.run(arguments) }
    // Parsed in a closure of its own: nothing of the parser stays in this frame, which the main thread
    // keeps while it runs the main queue (LeakSanitizer would report it).
    let (endpoint, token, request, options, cache) = try {
      () throws -> (String, String, TiCloudStorageExportRequest, Options, URL) in
      let flags = try FlagParser(arguments, known: Self.flags.merging(["--cache": .value]) { $1 })
      let cache = try FacadeSession.cacheDirectory(flags)
      let (request, endpoint) = try Self.request(from: flags, cache: cache)
      let options = Options(
        reportPath: flags.string("--report"), quiet: flags.has("--quiet"),
        progressLines: flags.has("--progress-lines"))
      let facadeRequest = TiCloudStorageExportRequest(
        startTimeMs: request.range.start.milliseconds, endTimeMs: request.range.end.milliseconds,
        videoChannelId: Int(request.videoTrack.channel), audioChannelId: request.audioTrack.map { Int($0.channel) },
        outputPath: request.output.path)
      return (try flags.required("--endpoint"), endpoint.token, facadeRequest, options, cache)
    }()
    FacadeSession.run(endpoint: endpoint, token: token, cache: cache) { storage in
      try export(request, with: storage, options)
    }
  }

  /// What the flags ask of the output besides the request.
  struct Options {
    var reportPath: String?
    var quiet: Bool
    /// Machine-readable progress on stderr, one JSON object per line (for scripts and tests).
    var progressLines: Bool
  }

  /// Runs the facade's detailed export (as an application calls it) and writes its report.
  static func export(
    _ request: TiCloudStorageExportRequest, with storage: TiCloudStorage, _ options: Options
  ) throws -> Int32 {
    let showProgress = !options.quiet && isatty(STDERR_FILENO) == 1
    let progressLines = options.progressLines
    let done = DispatchSemaphore(value: 0)
    let final = Locked<TiCloudStorageExportResult?>(nil)
    let started = storage.exportRecording(
      request, progress: nil,
      progressDetail: { detail in
        let (fraction, covered) = (detail.fraction, detail.coveredDurationMs)
        if progressLines {
          StandardError.write(Data("{\"progress\":\(fraction),\"covered_ms\":\(covered)}\n".utf8))
        }
        guard showProgress else { return }
        let width = 40
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
        StandardError.write(
          Data(String(format: "\r%@ %5.1f%%  %.1f s covered", bar, fraction * 100, Double(covered) / 1000).utf8))
      },
      onRecordingGap: nil, callbackThread: .background,
      completion: { result in
        final.withLock { $0 = result }
        done.signal()
      })
    guard let task = started.task else {
      throw FacadeSession.error(
        started.code, started.code == TiCloudStorageErrorCode.invalidArgument ? "the export request was refused" : nil)
    }
    // SIGINT, SIGTERM and SIGHUP cancel: the completion then reports `cancelled` and no file is left.
    Interruption.shared.onSignal { _ in _ = task.cancel() }
    done.wait()
    Interruption.shared.removeHandler()
    let result = final.withLock { $0! }
    if showProgress { StandardError.write(Data("\n".utf8)) }

    // A report that cannot be written is the run's failure unless the export failed first (its error is
    // the one line said).
    var unwritten: (any Error)?
    if let reportPath = options.reportPath, let report = result.report {
      do {
        try Output(code: result.code, file: result.file?.path, durationMs: result.file?.durationMs ?? 0, report: report)
          .write(to: reportPath)
      } catch {
        unwritten = error
      }
    }
    guard result.code == TiCloudStorageErrorCode.ok, let file = result.file, let report = result.report else {
      let termination = result.report.map { "\($0.termination)" } ?? "without a report"
      reportError(FacadeSession.error(result.code, result.message ?? "the export ended \(termination)"))
      return 1
    }
    if let unwritten { throw unwritten }
    if showProgress {
      wrote(
        file.path, covered: report.coveredDurationMs, segments: report.segments.count, gaps: report.gaps.count,
        complete: report.complete)
    }
    return 0
  }
}

/// The recordings `--endpoint` and `--token` name: the cloud API over HTTP, or a local library, which
/// accepts any token (`local` when none is given).
struct Endpoint {
  var service: any RecordingService
  var token: String

  /// `verifiesWhileReceiving: false` leaves the SHA-256 to the verifier (a fetch benchmark).
  init(_ flags: FlagParser, verifiesWhileReceiving: Bool = true) throws {
    let endpoint = try flags.required("--endpoint")
    service = try recordingService(endpoint: endpoint, verifiesWhileReceiving: verifiesWhileReceiving)
    if let token = flags.string("--token") {
      guard !token.isEmpty else { throw UsageError(message: "--token must not be empty") }
      self.token = token
    } else {
      guard service is LocalLibraryService else { throw UsageError(message: "--token is required for \(endpoint)") }
      token = "local"
    }
  }

  /// The source of a graph over `range` (the token fixed now, as the seed wants for an operation).
  func source(for range: MediaRange) -> CloudSegmentSource {
    CloudSegmentSource(service: service, range: range, token: token, prefetchBytes: 8 << 20)
  }
}

/// `path` as an output of `flag`: a usage error when it is empty or must not be replaced, when it lies
/// in the SDK's `cache` directory (its own files are there) or when it names a file of the `file://`
/// library at `endpoint` that the run reads (its index or one of its objects).
func outputPath(_ flag: String, _ path: String, cache: URL? = nil, endpoint: String? = nil) throws -> URL {
  guard !path.isEmpty else { throw UsageError(message: "\(flag) must not be empty") }
  guard !path.hasSuffix("/") else { throw UsageError(message: "\(flag): \(path) names a directory") }
  let url = URL(fileURLWithPath: path)
  do {
    try OutputFile.validate(url)
  } catch let error as MediaError {
    throw UsageError(message: "\(flag): \(error.message)")
  }
  // The file standard output is redirected to: the rename would replace it, and the lines with it.
  var output = stat()
  var named = stat()
  if fstat(1, &output) == 0, output.st_mode & S_IFMT == S_IFREG, stat(url.path, &named) == 0,
    named.st_dev == output.st_dev, named.st_ino == output.st_ino
  {
    throw UsageError(message: "\(flag): \(path) is where standard output goes")
  }
  if let cache, lies(url, in: cache) {
    throw UsageError(
      message: "\(flag): \(path) lies in the cache directory \(cache.path), where the SDK keeps its files")
  }
  if let endpoint, let library = URL(string: endpoint), library.isFileURL,
    let directory = try? libraryDirectory(of: library), FileManager.default.fileExists(atPath: url.path)
  {
    var read = [directory.appendingPathComponent("index.json")]
    if let index = try? RecordingIndex.load(library: directory) {
      read += index.segments.map { $0.fileURL(in: directory) }
    }
    if read.contains(where: { OutputFile.sameFile($0, url) }) {
      throw UsageError(message: "\(flag): \(path) is a file of the library the run reads; it is not replaced")
    }
  }
  // The file could not be created (fileWriteFailed, as when the export tries): found now, not after the
  // whole run that would have produced it.
  let directory = url.deletingLastPathComponent().path
  var status = stat()
  guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
    throw TiError(.fileWriteFailed, "\(flag): cannot create \(path): the directory \(directory) does not exist")
  }
  return url
}

/// Whether `url` is `directory` or lies under it, symbolic links of existing directories resolved.
private func lies(_ url: URL, in directory: URL) -> Bool {
  func canonical(_ url: URL) -> [String] {
    url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent)
      .standardizedFileURL.pathComponents
  }
  let path = canonical(url)
  let folder = directory.resolvingSymlinksInPath().standardizedFileURL.pathComponents
  return path.count >= folder.count && Array(path.prefix(folder.count)) == folder
}
