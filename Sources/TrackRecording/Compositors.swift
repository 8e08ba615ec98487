import Foundation
public import Nodes
import PipelineGraph

/// The graph behind a compositor: `TrackSource` (tagged) for each input → a mixer → `TrackFeed` of the
/// output track, on a thread of its own. The output track ends when every input has ended (or at
/// ``stop()``).
final class CompositorGraph: Sendable {
  let pipeline: Pipeline
  private let executor: ThreadExecutor
  private let sources: [TrackSource]
  private let output: MediaTrack
  private let failed = Locked<MediaError?>(nil)

  /// Inputs become tracks `kind:0`, `kind:1`…; `mixer` is made from those ids.
  init<Mixer: Node>(
    name: String, inputs: [MediaTrack], output: MediaTrack, mixer: ([TrackID]) throws -> Mixer,
    admission: (Mixer) -> LaneAdmission
  ) throws where Mixer.Input == DecodedFrame, Mixer.Output == DecodedFrame {
    guard !inputs.isEmpty, inputs.count <= 64 else {
      throw MediaError(.invalidArgument, "a compositor takes 1…64 tracks, not \(inputs.count)")
    }
    guard inputs.allSatisfy({ $0.kind == output.kind }) else {
      throw MediaError(.invalidArgument, "a \(output.kind) compositor takes \(output.kind) tracks only")
    }
    let ids = inputs.indices.map { TrackID(output.kind, channel: UInt8($0)) }
    let executor = ThreadExecutor(name: "tirtc.\(name)")
    self.executor = executor
    let pipeline = Pipeline(executor: executor)
    self.pipeline = pipeline
    self.output = output
    let node = try mixer(ids)
    // Each input's source is held back while its lane is closed: one that runs ahead waits for the others.
    let lanes = admission(node)
    sources = zip(inputs, ids).map { input, id in
      TrackSource(name: "Input\(id.channel)", track: input, tag: id, admission: lanes)
    }
    for source in sources { pipeline.connect(source, to: node, limits: EdgeLimits(items: 16)) }
    pipeline.connect(node, to: TrackFeed(name: "Output", track: output), limits: EdgeLimits(items: 4))
    let failed = self.failed
    pipeline.errorHandler = { failure in
      failed.withLock { $0 = $0 ?? MediaError(failure) }
      output.end()
      return .stopPipeline
    }
  }

  deinit {
    pipeline.stop()
    output.end()
    let executor = self.executor
    DispatchQueue.global().async { executor.shutdown() }
  }

  func start() throws { try pipeline.start() }

  /// The mixers' `stallTime` for `inputs`: half a second when one of them is live (the mixers' own), 5 s
  /// when all are files (a first picture of 4000x3000 on a busy core took over a second to decode). The
  /// lag in media time stays the mixers' own: an input runs at most a few seconds ahead of the others
  /// before it is held back, so a longer lag would never be reached, and a file whose sound starts 20 s in
  /// would hold every input.
  static func stallTime(for inputs: [MediaTrack]) -> MediaDuration {
    .microseconds(isLive(inputs) ? 500_000 : 5_000_000)
  }

  /// Whether a composition of `inputs` comes in real time: when one of them does.
  static func isLive(_ inputs: [MediaTrack]) -> Bool { inputs.contains { $0.isLive } }

  func stop() { for source in sources { source.close() } }

  var failure: MediaError? { failed.withLock { $0 } }
}

/// Composes several video tracks into one (seed 003, "Compositing"): each track's pictures fitted inside
/// its cell — a grid, or cells the caller gives — at a constant frame rate, into ``outputTrack``, which a
/// ``TrackRecorder`` or an output takes like any track. A track may start late (its cell is black until
/// then) or end early (its last picture stays a second, then black). Thread-safe.
public final class VideoCompositor: Sendable {
  /// Where the tracks go.
  public enum Layout: Sendable, Hashable {
    /// A grid: as many columns as the square root of the count rounded up, equal cells.
    case grid
    /// One cell for each track, in pixels of the output (even numbers).
    case cells([VideoMixer.Cell])
  }

  /// The composed pictures.
  public let outputTrack: MediaTrack
  private let graph: CompositorGraph

  /// A compositor of `tracks` (video, 1…64) into pictures of `size` at `fps`. A track that lags behind the
  /// others and brings nothing for half a second is a live one that stalled, and is no longer waited for;
  /// when every track is a file's (`MediaTrack.isLive` false), for 5 s: a file that a slow decode or a
  /// busy machine holds back is waited for, but not forever — a file whose sound starts later than its
  /// picture holds its picture back through the reading they share, and waiting for that sound would hold
  /// every input. The output is live when one of the tracks is. Its pictures are at `origin + n / fps`:
  /// give the time the tracks start from when they have one (files read from a common start: a picture
  /// that starts late in its file starts late in the composition); nil, at the first picture of any track.
  /// - Throws: `MediaError` `invalidArgument` for an audio track, a cell per track missing or outside
  ///   the picture, or a rate outside 1…240.
  public init(
    tracks: [MediaTrack], layout: Layout = .grid, size: VideoSize = .hd720, fps: Int = 20, origin: MediaTime? = nil
  ) throws {
    let output = MediaTrack(id: TrackID(.video, channel: 0), isLive: CompositorGraph.isLive(tracks))
    outputTrack = output
    graph = try CompositorGraph(name: "video-compositor", inputs: tracks, output: output) { ids in
      let cells: [VideoMixer.Cell]
      switch layout {
      case .grid: cells = VideoMixer.Cell.grid(ids.count, width: size.width, height: size.height)
      case .cells(let given): cells = given
      }
      return try VideoMixer(
        inputs: ids, cells: cells, width: size.width, height: size.height, fps: fps, output: output.id,
        stallTime: CompositorGraph.stallTime(for: tracks), origin: origin)
    } admission: {
      $0.admission
    }
  }

  /// Starts composing: the output carries pictures as the tracks bring theirs.
  public func start() throws { try graph.start() }

  /// Ends the output after what the tracks queued.
  public func stop() { graph.stop() }

  /// Why composing stopped early, if it did.
  public var failure: MediaError? { graph.failure }
}

/// Mixes several audio tracks into one (seed 003, "Compositing"): each track converted to the output's
/// rate and channels, scaled by its gain, summed under a soft limiter, into ``outputTrack``. A track may
/// start late or end early. Thread-safe.
public final class AudioCompositor: Sendable {
  /// The mix.
  public let outputTrack: MediaTrack
  private let graph: CompositorGraph

  /// A mixer of `tracks` (audio, 1…64) with `gains` (linear, 0…16; 1 each by default) into `sampleRate`
  /// and `channels` (1 or 2), from `origin` (nil: the first frame of any track); tracks that stall are
  /// waited for, and `origin` is given, as ``VideoCompositor/init(tracks:layout:size:fps:origin:)`` says.
  /// - Throws: `MediaError` `invalidArgument` for a video track, mismatched gains or an unsupported format.
  public init(
    tracks: [MediaTrack], gains: [Double]? = nil, sampleRate: Int = 48_000, channels: Int = 2,
    origin: MediaTime? = nil
  ) throws {
    let output = MediaTrack(id: TrackID(.audio, channel: 0), isLive: CompositorGraph.isLive(tracks))
    outputTrack = output
    graph = try CompositorGraph(name: "audio-compositor", inputs: tracks, output: output) { ids in
      try AudioMixer(
        inputs: ids, gains: gains, format: AudioDeviceFormat(sampleRate: sampleRate, channels: channels),
        output: output.id, stallTime: CompositorGraph.stallTime(for: tracks), origin: origin)
    } admission: {
      $0.admission
    }
  }

  /// Starts mixing.
  public func start() throws { try graph.start() }

  /// Ends the output after what the tracks queued.
  public func stop() { graph.stop() }

  /// Why mixing stopped early, if it did.
  public var failure: MediaError? { graph.failure }
}
