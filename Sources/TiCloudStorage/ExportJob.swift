import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// Export as a graph configuration: `source → SegmentVerifier → SegmentDemuxer → TrackRouter →
/// AudioTranscoder → GapDetector → Exporter` over library objects, or `source → RangeGate → TrackRouter →
/// AudioTranscoder → GapDetector → Exporter` over any source of packets (a media file), on its own
/// executor thread and a free-running clock.
///
/// The MP4 is written under a temporary name beside `output` and renamed on success; a cancelled,
/// stopped or failed export leaves no file. `cancel()` and `stop()` are non-blocking requests: the
/// completion is the authority on the outcome, and once the task has ended they change nothing.
public final class ExportJob: @unchecked Sendable {
  /// What to export and where.
  public struct Request: Sendable {
    /// The range.
    public var range: MediaRange
    /// The video track.
    public var videoTrack: TrackID
    /// The audio track, if any.
    public var audioTrack: TrackID?
    /// The final MP4's path.
    public var output: URL
    /// Where the file starts: at the keyframe at or before the range's start (the seed's export, the
    /// default) or exactly at it.
    public var cut: Cut

    /// Creates a request.
    public init(range: MediaRange, videoTrack: TrackID, audioTrack: TrackID?, output: URL, cut: Cut = .keyframe) {
      self.range = range
      self.videoTrack = videoTrack
      self.audioTrack = audioTrack
      self.output = output
      self.cut = cut
    }
  }

  /// Where an export starts.
  public enum Cut: String, Sendable, CaseIterable {
    /// At the keyframe at or before the range's start: every frame is copied, the file may begin up
    /// to a group of pictures early (the report's first source range says where).
    case keyframe
    /// Exactly at the range's start: the group of pictures that holds it is decoded and re-encoded
    /// from the start on (`ExactCut`), the rest is copied; the report's first source range starts at
    /// the range's start.
    case exact

    /// The cut an export of `file` from `start` makes when this one is asked for: the same, but exact
    /// where a keyframe cut would copy pictures the file's edit list hides
    /// (`MediaFileInfo.keyframeCutShowsHiddenPictures(at:)`): the pictures of that group the file shows
    /// are re-encoded instead. When the exact cut is refused (an `ExactCut.Refusal` among the result's
    /// causes), the keyframe cut asked for is what is left.
    public func showing(_ file: MediaFileInfo, from start: MediaTime) -> Cut {
      self == .keyframe && file.keyframeCutShowsHiddenPictures(at: start) ? .exact : self
    }
  }

  private enum Ending {
    case cancelled(TiErrorCode)
    case failed(TiError)
  }

  /// The request.
  public let request: Request
  private let executor = ThreadExecutor(name: "tipipe.export")
  private let pipeline: Pipeline
  private let exporter: Exporter
  private let workingPath: String
  // Confined to the executor.
  private var ending: Ending?
  private var completed = false
  private let completion: @Sendable (ExportResult) -> Void
  private let outcome = OneShot<ExportResult>()
  /// The first cancel or stop asked for, from any thread.
  private let requested = Locked<TiErrorCode?>(nil)

  /// The export's graph as `branches` sees it before it starts: connect extra nodes to `packets` (a
  /// fan-out: they get every packet of the exported tracks, in order, with the in-band events) with
  /// `pipeline.connect`. Their failures end the export like the graph's own.
  public struct Graph {
    /// The pipeline (not started yet).
    public let pipeline: Pipeline
    /// The node that emits the exported tracks' packets.
    public let packets: TrackRouter
  }

  /// Builds the graph over `source` (library objects: a `CloudSegmentSource` over the cloud or a `file://` library), lets
  /// `branches` add nodes to it, and starts it. Progress (fraction, covered ms) and gaps are delivered on
  /// the export's thread; `completion` is called exactly once.
  public convenience init<Source: SourceNode>(
    request: Request, source: Source,
    progress: (@Sendable (Double, Int64) -> Void)? = nil,
    gap: (@Sendable (RecordingGap) -> Void)? = nil,
    branches: ((Graph) throws -> Void)? = nil,
    completion: @escaping @Sendable (ExportResult) -> Void
  ) throws where Source.Output == FetchedObject {
    try self.init(
      request: request, sourceID: ObjectIdentifier(source), progress: progress, gap: gap, branches: branches,
      completion: completion
    ) { pipeline in try Self.front(source, request: request, in: pipeline) }
  }

  /// Builds the graph over a source of packets (a `MediaFileSource`, a `SyntheticSource`, a node of
  /// one's own), lets `branches` add nodes to it, and starts it: `source → RangeGate → TrackRouter →
  /// AudioTranscoder → GapDetector → Exporter`. The request's range and tracks are in the source's times and track ids
  /// (a `MediaFileSource` made with `init(path:)` gives the file's own times: see
  /// `MediaFileInfo`). Progress and gaps are delivered on the export's thread; `completion` is called
  /// exactly once.
  ///
  /// A `valve` keeps only the stretches a decision taken on another branch keeps (a branch of one's own
  /// that decodes `Graph.packets` and judges the pictures): it sits after the track router, so the file
  /// holds the kept stretches and the report gives the rest as gaps.
  public convenience init<Source: SourceNode>(
    request: Request, packets source: Source,
    progress: (@Sendable (Double, Int64) -> Void)? = nil,
    gap: (@Sendable (RecordingGap) -> Void)? = nil,
    branches: ((Graph) throws -> Void)? = nil,
    valve: Valve? = nil,
    completion: @escaping @Sendable (ExportResult) -> Void
  ) throws where Source.Output == EncodedPacket {
    try self.init(
      request: request, sourceID: ObjectIdentifier(source), progress: progress, gap: gap, branches: branches,
      valve: valve, completion: completion
    ) { pipeline in Self.front(packets: source, request: request, in: pipeline) }
  }

  private init(
    request: Request, sourceID: ObjectIdentifier, progress: (@Sendable (Double, Int64) -> Void)?,
    gap: (@Sendable (RecordingGap) -> Void)?, branches: ((Graph) throws -> Void)?, valve: Valve? = nil,
    completion: @escaping @Sendable (ExportResult) -> Void, front: (Pipeline) throws -> TrackRouter
  ) throws {
    try OutputFile.validate(request.output)
    OutputFile.removeStaleWorkingFiles(besides: request.output)
    self.request = request
    self.completion = completion
    workingPath = OutputFile.workingPath(for: request.output)
    pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    exporter = Exporter(
      configuration: .init(
        range: request.range, videoTrack: request.videoTrack, audioTrack: request.audioTrack,
        workingPath: workingPath))
    exporter.onProgress = progress
    exporter.onGap = gap
    let router = try front(pipeline)
    try Self.back(from: router, to: exporter, request: request, valve: valve, in: pipeline)
    pipeline.errorHandler = { [unowned self] failure in
      // Per-object failures arrive as gap events; what reaches here ends the task. A failure of the source
      // ends the stream instead of the pipeline, so what was already
      // fetched still reaches the file (termination `interrupted`); any other failure stops at once.
      if ending == nil { ending = .failed(TiError(failure)) }
      return failure.nodeID == sourceID ? .endBranch : .stopPipeline
    }
    pipeline.onEndOfStream = { [unowned self] _ in complete() }
    pipeline.onStop = { [unowned self] in executor.execute { self.complete() } }
    try branches?(Graph(pipeline: pipeline, packets: router))
    try pipeline.start()
  }

  /// The graph an export of `request` over `source` runs, built but not started (for
  /// `tipipe graph export`: nodes, typed edges and their bounds).
  public static func configuration<Source: SourceNode>(request: Request, source: Source) throws -> Pipeline
  where Source.Output == FetchedObject {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock(freeRunning: true))
    let router = try front(source, request: request, in: pipeline)
    try back(from: router, to: exporter(for: request), request: request, in: pipeline)
    return pipeline
  }

  /// The graph an export of `request` over a source of packets runs, built but not started.
  public static func configuration<Source: SourceNode>(request: Request, packets source: Source) throws -> Pipeline
  where Source.Output == EncodedPacket {
    let pipeline = Pipeline(executor: ManualExecutor(), clock: VirtualClock(freeRunning: true))
    let router = front(packets: source, request: request, in: pipeline)
    try back(from: router, to: exporter(for: request), request: request, in: pipeline)
    return pipeline
  }

  private static func exporter(for request: Request) -> Exporter {
    Exporter(
      configuration: .init(
        range: request.range, videoTrack: request.videoTrack, audioTrack: request.audioTrack,
        workingPath: OutputFile.workingPath(for: request.output)))
  }

  private static func router(for request: Request) -> TrackRouter {
    TrackRouter(tracks: Set([request.videoTrack] + (request.audioTrack.map { [$0] } ?? [])))
  }

  /// `source → SegmentVerifier → SegmentDemuxer → TrackRouter`; returns the router (the fan-out point of
  /// `branches`).
  private static func front<Source: SourceNode>(
    _ source: Source, request: Request, in pipeline: Pipeline
  ) throws -> TrackRouter where Source.Output == FetchedObject {
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: request.range.start, endingAt: request.range.end)
    let router = router(for: request)
    // Memory stays bounded whatever the range's length: a few objects in flight, a few MB of packets.
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2, bytes: 8 << 20))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2, bytes: 8 << 20))
    pipeline.connect(demuxer, to: router, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    return router
  }

  /// `source → RangeGate → TrackRouter`: the range's packets from the keyframe at or before its start, as
  /// the demuxer trims library objects.
  private static func front<Source: SourceNode>(
    packets source: Source, request: Request, in pipeline: Pipeline
  ) -> TrackRouter where Source.Output == EncodedPacket {
    let gate = RangeGate(keeping: [request.range], videoTrack: request.videoTrack, audioTrack: request.audioTrack)
    let router = router(for: request)
    pipeline.connect(source, to: gate, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    pipeline.connect(gate, to: router, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    return router
  }

  /// `router → [Valve] → [ExactCut] → AudioTranscoder → GapDetector → exporter`.
  private static func back(
    from router: TrackRouter, to exporter: Exporter, request: Request, valve: Valve? = nil, in pipeline: Pipeline
  ) throws {
    let transcoder = try AudioTranscoder()
    let limits = EdgeLimits(items: 256, bytes: 4 << 20)
    switch (request.cut, valve) {
    case (.keyframe, nil):
      pipeline.connect(router, to: transcoder, limits: limits)
    case (.keyframe, let valve?):
      pipeline.connect(router, to: valve, limits: limits)
      pipeline.connect(valve, to: transcoder, limits: limits)
    case (.exact, let valve):
      let cut = ExactCut(start: request.range.start, videoTrack: request.videoTrack, audioTrack: request.audioTrack)
      if let valve {
        valve.cutsExactly = true
        pipeline.connect(router, to: valve, limits: limits)
        pipeline.connect(valve, to: cut, limits: limits)
      } else {
        pipeline.connect(router, to: cut, limits: limits)
      }
      pipeline.connect(cut, to: transcoder, limits: limits)
    }
    let detector = GapDetector(configuration: exporter.configuration.gapDetector)
    pipeline.connect(transcoder, to: detector, limits: EdgeLimits(items: 256, bytes: 4 << 20))
    pipeline.connect(detector, to: exporter, limits: EdgeLimits(items: 256, bytes: 4 << 20))
  }

  /// Requests cancellation: no file, termination `cancelled`, code `cancelled` (6115). Non-blocking.
  public func cancel() { request(.cancelled) }

  /// Requests a stop: no file, termination `cancelled`, code `stopped` (6124). Non-blocking.
  public func stop() { request(.stopped) }

  /// The exporter stops taking input at once; the ending is noted first, so that a graph that reaches its
  /// end in between still ends as requested (its file may lack what the exporter ignored).
  private func request(_ code: TiErrorCode) {
    requested.withLock { if $0 == nil { $0 = code } }
    exporter.requestStop()
    end(.cancelled(code))
  }

  private func end(_ reason: Ending) {
    executor.execute { [self] in
      guard !completed, ending == nil else { return }
      ending = reason
      pipeline.stop()
    }
  }

  /// The graph's counters; read them once the export has ended.
  public func statistics() -> PipelineStatistics { pipeline.statistics() }

  /// Video frames written to the file; read it once the export has ended.
  public var writtenVideoFrames: Int { exporter.writtenVideoPackets }

  /// Blocks until the export has ended and returns its result (the one `completion` also gets).
  public func waitForResult() -> ExportResult { outcome.wait() }

  /// Blocks until the export has ended or `timeout` has passed: its result, or nil when it had not
  /// ended by then (it goes on; a test's deadline, a command's watchdog).
  public func waitForResult(timeout: Duration) -> ExportResult? { outcome.wait(timeout: timeout) }

  /// The result, once the export has ended.
  public var result: ExportResult {
    get async { await outcome.value() }
  }

  /// Runs on the executor once: after end of stream, or after the pipeline stopped. The file is
  /// finished (blocking disk I/O) on the pipeline's workers, not on the graph's thread.
  private func complete() {
    guard !completed else { return }
    completed = true
    pipeline.stop()
    if ending == nil, let code = requested.withLock({ $0 }) { ending = .cancelled(code) }
    let ending = self.ending
    pipeline.workers.execute { [self, executor] in
      let result = conclude(ending)
      executor.shutdown()
      outcome.set(result)
      completion(result)
    }
  }

  /// The result of an export that ended for `ending`; finishes or removes the file. The pipeline has
  /// stopped: the exporter is no longer touched by the graph.
  private func conclude(_ ending: Ending?) -> ExportResult {
    let result: ExportResult
    switch ending {
    case nil:
      result = finishNormally()
    case .cancelled(let code):
      exporter.abandonFile()
      removeWorkingFile()
      result = ExportResult(
        code: code, file: nil, durationMs: 0, report: report(.cancelled, code),
        message: code == .stopped ? "the export was stopped" : "the export was cancelled")
    case .failed(let error):
      if exporter.hasMedia && error.code != .fileWriteFailed {
        result = finalize(termination: .interrupted, cause: error.code, message: error.message, error: error)
      } else {
        exporter.abandonFile()
        removeWorkingFile()
        result = ExportResult(
          code: error.code, file: nil, durationMs: 0, report: report(.failed, error.code),
          message: error.message, error: error)
      }
    }
    return result
  }

  private func finishNormally() -> ExportResult {
    guard exporter.hasMedia else {
      exporter.abandonFile()
      removeWorkingFile()
      let code = TiErrorCode.noRecordableMedia
      return ExportResult(
        code: code, file: nil, durationMs: 0, report: report(.failed, code),
        message: "the range has no video of the requested channel that can be written")
    }
    return finalize(termination: .exhausted, cause: .ok, message: nil)
  }

  private func finalize(
    termination: ExportTermination, cause: TiErrorCode, message: String?, error ended: TiError? = nil
  ) -> ExportResult {
    do {
      try exporter.finalizeFile(to: request.output.path)
      removeWorkingFile()
      return ExportResult(
        code: .ok, file: request.output, durationMs: exporter.outputDurationMs,
        report: report(termination, cause), message: message, error: ended)
    } catch {
      let failure = TiError(error)
      let code = failure.code == .noRecordableMedia ? TiErrorCode.noRecordableMedia : .fileWriteFailed
      exporter.abandonFile()
      removeWorkingFile()
      return ExportResult(
        code: code, file: nil, durationMs: 0, report: report(.failed, code),
        message: failure.message, error: failure)
    }
  }

  /// The exporter's report of an ending with the seed code `code`: a task that ended for want of media
  /// (`noRecordableMedia`) scanned the whole range.
  private func report(_ termination: ExportTermination, _ code: TiErrorCode) -> ExportReport {
    exporter.report(
      termination: termination, cause: code.rawValue, failure: code == .noRecordableMedia ? .noMedia : nil)
  }

  private func removeWorkingFile() {
    try? FileManager.default.removeItem(atPath: workingPath)
  }
}
