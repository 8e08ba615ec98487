import Foundation
import Nodes
import PipelineGraph
import Synchronization
import TiCloudStorage

/// `tipipe bench` (`spec/cli.md`): decode or export as fast as possible and print what it cost, for
/// benchmark suites.
enum BenchCommand {
  static let summary = "decode (or export) as fast as possible and print frames/s, CPU and per-node statistics"
  static let usage = """
    usage: tipipe bench decode (--endpoint file:///DIR [--token K] --start T --end T --video-channel N
                                | --input FILE) [--threads N] [--keyframes-only] [--json]
           tipipe bench export <export's flags> [--json]
           tipipe bench fetch --endpoint E [--token K] --start T --end T [--transfers 4]
                              [--prefetch-mb 32] [--json]
           tipipe bench seek --endpoint E [--token K] --start T --end T --video-channel N [--seeks 20]

    decode: every video frame of [start, end) of a library (or of a media file) goes through
    source → verify → demux → decode (or file source → decode) as fast as the machine allows.
    export: an export as `tipipe export` makes it. Both print frames, seconds, frames/s, CPU seconds
    (user + sys of the process) and each node's items in/out and busy time; --json prints one JSON
    object instead. --threads sets libavcodec's decoding threads (default: one per core, FrameDecoder's default).
    fetch: lists and downloads every object of [start, end) (CloudSegmentSource with at most
    --transfers at once, no SHA-256 on arrival) into a sink that only counts them: frames are objects,
    and bytes are printed.
    seek: a Replay in real time seeks to --seeks random targets of the range; prints the median, min and
    max time from `seek` to the first frame at the target being presented.
    Exit 0 when it ran, 1 when it failed (or an object could not be fetched), 2 for a usage error.
    """

  struct Figures: Encodable {
    struct NodeFigures: Encodable {
      var name: String
      var itemsIn: Int
      var itemsOut: Int
      var busyMs: Double
      enum CodingKeys: String, CodingKey {
        case name
        case itemsIn = "items_in"
        case itemsOut = "items_out"
        case busyMs = "busy_ms"
      }
    }
    var frames: Int
    var bytes: Int?
    var seconds: Double
    var framesPerSecond: Double
    var cpuSeconds: Double
    var nodes: [NodeFigures]
    enum CodingKeys: String, CodingKey {
      case frames, bytes, seconds, nodes
      case framesPerSecond = "frames_per_second"
      case cpuSeconds = "cpu_seconds"
    }
  }

  static func run(_ arguments: [String]) throws -> Int32 {
    guard let mode = arguments.first, ["decode", "export", "fetch", "seek"].contains(mode) else {
      throw UsageError(message: "bench needs decode, export, fetch or seek")
    }
    let rest = Array(arguments.dropFirst())
    if mode == "seek" {
      return try SeekBenchmark.run(
        try FlagParser(
          rest,
          known: [
            "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--video-channel": .value,
            "--seeks": .value,
          ]))
    }
    let began = (Date(), cpuSeconds())
    let frames: Int
    let statistics: PipelineStatistics
    let json: Bool
    var bytes: Int?
    if mode == "fetch" {
      let flags = try FlagParser(
        rest,
        known: [
          "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--transfers": .value,
          "--prefetch-mb": .value, "--json": .boolean,
        ])
      json = flags.has("--json")
      let counted: ObjectCount
      (counted, statistics) = try fetch(flags)
      frames = counted.objects.load(ordering: .relaxed)
      bytes = counted.bytes.load(ordering: .relaxed)
    } else if mode == "decode" {
      let flags = try FlagParser(
        rest,
        known: [
          "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--video-channel": .value,
          "--input": .value, "--threads": .value, "--keyframes-only": .boolean, "--json": .boolean,
        ])
      json = flags.has("--json")
      (frames, statistics) = try decode(flags)
    } else {
      var known = ExportCommand.flags
      known["--json"] = .boolean
      let flags = try FlagParser(rest, known: known)
      json = flags.has("--json")
      let (request, endpoint) = try ExportCommand.request(from: flags)
      let job = try ExportJob(
        request: request, source: endpoint.source(for: request.range),
        completion: { _ in })
      let result = job.waitForResult()
      guard result.code == .ok else {
        throw TiError(result.code, result.message ?? "the export ended \(result.report.termination)")
      }
      frames = job.writtenVideoFrames
      statistics = job.statistics()
    }
    let seconds = Date().timeIntervalSince(began.0)
    let figures = Figures(
      frames: frames, bytes: bytes, seconds: seconds, framesPerSecond: Double(frames) / max(seconds, 1e-9),
      cpuSeconds: cpuSeconds() - began.1,
      nodes: statistics.nodes.map {
        .init(name: $0.name, itemsIn: $0.itemsIn, itemsOut: $0.itemsOut, busyMs: Double($0.busyNanoseconds) / 1e6)
      })
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys]
      if let error = StandardOutput.write(try encoder.encode(figures) + Data("\n".utf8)) { fail(error) }
    } else {
      print(
        String(
          format: "%d %@ in %.3f s = %.1f/s, %.3f CPU s", figures.frames, mode == "fetch" ? "objects" : "frames",
          figures.seconds, figures.framesPerSecond, figures.cpuSeconds))
      if let bytes { print(String(format: "%d bytes = %.1f MB/s", bytes, Double(bytes) / 1e6 / max(seconds, 1e-9))) }
      print("  node                     items in  items out   busy ms")
      for node in figures.nodes {
        let name = node.name.padding(toLength: 24, withPad: " ", startingAt: 0)
        print("  " + name + String(format: " %9d %10d %9.1f", node.itemsIn, node.itemsOut, node.busyMs))
      }
    }
    return 0
  }

  /// Fetches every object of the range into a counting sink.
  private static func fetch(_ flags: FlagParser) throws -> (ObjectCount, PipelineStatistics) {
    // Downloads only, as curl does: no SHA-256 on arrival.
    let endpoint = try Endpoint(flags, verifiesWhileReceiving: false)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    guard start < end else { throw TiError(.invalidArgument, "--start must be before --end") }
    let transfers = try flags.integer("--transfers", default: 4, range: 1...64)
    let prefetch = try flags.integer("--prefetch-mb", default: 32, range: 1...4096)
    let source = CloudSegmentSource(
      service: endpoint.service, range: MediaRange(startMilliseconds: start, endMilliseconds: end),
      token: endpoint.token, prefetchBytes: prefetch << 20, maximumTransfers: transfers)
    let executor = ThreadExecutor(name: "tipipe.fetch")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let sink = ObjectCount()
    pipeline.connect(source, to: sink, limits: EdgeLimits(items: 4))
    let outcome = try pipeline.runToCompletion()
    if let failure = outcome.failures.first { throw TiError(failure.error) }
    if let failed = sink.firstFailure.withLock({ $0 }) { throw failed }
    return (sink, pipeline.statistics())
  }

  /// Decodes every video frame of the range or file; returns the frames decoded and the statistics.
  private static func decode(_ flags: FlagParser) throws -> (Int, PipelineStatistics) {
    let threads = try flags.integer(
      "--threads", default: FrameDecoder.defaultThreads, range: 1...64)
    let keyframesOnly = flags.has("--keyframes-only")
    if let input = flags.string("--input") {
      guard flags.string("--endpoint") == nil else { throw UsageError(message: "give --input or --endpoint, not both") }
      // A file without a picture has nothing to decode: a failure, not "0 frames" (a benchmark would
      // compare a rate of nothing).
      guard try MediaFileSource.probe(path: input).video != nil else {
        throw TiError(.unsupportedFormat, "\(input) has no H.264 or H.265 video to decode")
      }
      let decoder = try FrameDecoder(track: TrackID(.video, channel: 0), threads: threads, keyframesOnly: keyframesOnly)
      return try countFrames(from: MediaFileSource(path: input, startTime: MediaTime(microseconds: 0)), decoder)
    }
    let endpoint = try Endpoint(flags)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    guard start < end else { throw TiError(.invalidArgument, "--start must be before --end") }
    guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
    let channel = try flags.integer("--video-channel", default: 0, range: 0...255)
    let range = MediaRange(startMilliseconds: start, endMilliseconds: end)
    return try decode(
      source: endpoint.source(for: range), range: range, channel: UInt8(channel), threads: threads,
      keyframesOnly: keyframesOnly)
  }

  /// `source → SegmentVerifier → SegmentDemuxer → FrameDecoder → count` over `range`, on its own
  /// thread; returns the frames decoded and the graph's statistics.
  static func decode<Source: SourceNode>(
    source: Source, range: MediaRange, channel: UInt8, threads: Int, keyframesOnly: Bool = false
  ) throws -> (Int, PipelineStatistics) where Source.Output == FetchedObject {
    let decoder = try FrameDecoder(
      track: TrackID(.video, channel: channel), threads: threads, keyframesOnly: keyframesOnly)
    return try countFrames(
      from: source, try SegmentVerifier(),
      SegmentDemuxer(startingAt: range.start, endingAt: range.end), decoder)
  }

  private static func countFrames<Source: SourceNode>(
    from source: Source, _ verifier: SegmentVerifier, _ demuxer: SegmentDemuxer, _ decoder: FrameDecoder
  ) throws -> (Int, PipelineStatistics) where Source.Output == FetchedObject {
    try run(decoder) { pipeline in
      pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 4))
      pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 4))
      pipeline.connect(demuxer, to: decoder, limits: EdgeLimits(items: 64))
    }
  }

  private static func countFrames(from source: MediaFileSource, _ decoder: FrameDecoder) throws -> (
    Int, PipelineStatistics
  ) {
    try run(decoder) { pipeline in pipeline.connect(source, to: decoder) }
  }

  /// Builds the graph up to `decoder` with `connect`, counts the decoder's frames, runs it to the end.
  private static func run(
    _ decoder: FrameDecoder, connect: (Pipeline) -> Void
  ) throws -> (Int, PipelineStatistics) {
    let executor = ThreadExecutor(name: "tipipe.decode")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let sink = FrameCount()
    connect(pipeline)
    pipeline.connect(decoder, to: sink, limits: EdgeLimits(items: 1))
    let outcome = try pipeline.runToCompletion()
    if let failure = outcome.failures.first { throw TiError(failure.error) }
    return (sink.frames.load(ordering: .relaxed), pipeline.statistics())
  }

  /// User + system CPU seconds of this process so far.
  private static func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
  }
}

/// Counts the objects and bytes that reach it; keeps the first failure.
final class ObjectCount: Node, Sendable {
  typealias Input = FetchedObject
  typealias Output = Never
  let objects = Atomic(0)
  let bytes = Atomic(0)
  let firstFailure = Locked<MediaError?>(nil)
  func process(_ input: FetchedObject, context: NodeContext<Never>) throws {
    switch input.result {
    case .success(let data):
      objects.add(1, ordering: .relaxed)
      bytes.add(data.count, ordering: .relaxed)
    case .failure(let error):
      firstFailure.withLock { if $0 == nil { $0 = error } }
    }
  }
}

/// Counts the frames that reach it.
final class FrameCount: Node, Sendable {
  typealias Input = DecodedFrame
  typealias Output = Never
  let frames = Atomic(0)
  func process(_ input: DecodedFrame, context: NodeContext<Never>) throws { frames.add(1, ordering: .relaxed) }
}
