import Foundation
import Nodes
import PipelineGraph

/// One recording as a graph: the recorder's sink subgraph over its tracks,
///
/// `TrackSource(video) → RecordingGate → FrameRateConverter → VideoFitter → VideoEncoder ─┐`
/// `TrackSource(audio) → RecordingGate → AudioEncoder ──────────────────────────────────────┴→ FragmentedMP4Writer`
///
/// on an executor of its own (both branches on one thread: the gates share their time line without a
/// lock; x264 has threads of its own). It ends once the tracks end or ``stop()`` closes its sources:
/// the writer completes the file and ``start(onEnd:)``'s handler gets the recorded duration or the
/// failure, once. Released or ``abort()``ed before that, the file is closed as it is (readable up to
/// its last fragment).
final class RecordingSession: Sendable {
  /// The file.
  let url: URL
  /// The pipeline, for its shape (`tipipe graph`) and statistics.
  let pipeline: Pipeline
  private let executor: ThreadExecutor
  private let timeline: RecordingGate.Timeline
  private let sources: [TrackSource]
  private let writer: ExecutorConfined<FragmentedMP4Writer>
  private let ended = Locked(false)

  /// A recording of `video` and `audio` (at least one) into `url` (created by the caller), pictures at
  /// `fps` fitted inside `size`, `cuts` (source time) left out, the file's 0 at source time `origin`
  /// (nil: the first frame of either track).
  init(
    url: URL, video: MediaTrack?, audio: MediaTrack?, fps: Int, size: VideoSize, cuts: [MediaRange] = [],
    origin start: MediaTime? = nil
  ) throws {
    self.url = url
    let executor = ThreadExecutor(name: "tirtc.recorder")
    self.executor = executor
    let pipeline = Pipeline(executor: executor)
    self.pipeline = pipeline
    let timeline = RecordingGate.Timeline(cuts: cuts, origin: start)
    self.timeline = timeline
    let videoID = video.map { _ in TrackID(.video, channel: 0) }
    let audioID = audio.map { _ in TrackID(.audio, channel: 0) }
    // A file's tracks are waited for longer than live ones: its sound may start minutes in.
    let live = [video, audio].contains { $0?.isLive == true }
    let trackWait = live ? FragmentedMP4Writer.liveTrackWait : FragmentedMP4Writer.fileTrackWait
    let writer = try FragmentedMP4Writer(
      destination: url, videoTrack: videoID, audioTrack: audioID, trackWait: trackWait)
    self.writer = ExecutorConfined(writer)
    let origin = MediaTime(microseconds: 0)
    var sources: [TrackSource] = []
    if let video, let videoID {
      let source = TrackSource(name: "VideoTrack", track: video)
      let gate = RecordingGate(name: "VideoGate", timeline: timeline)
      // A picture that starts after the sound: its first picture held from the start, as far as the
      // writer waits for a track.
      let rate = try FrameRateConverter(fps: fps, origin: origin, maximumLead: trackWait)
      let fitter = try VideoFitter(width: size.width, height: size.height)
      let encoder = try VideoEncoder(
        configuration: .init(
          track: videoID, codec: .h264, width: size.width, height: size.height, quality: 23,
          keyframeInterval: .microseconds(2_000_000), preset: "veryfast"))
      pipeline.connect(source, to: gate, limits: EdgeLimits(items: 8))
      pipeline.connect(gate, to: rate, limits: EdgeLimits(items: 8))
      pipeline.connect(rate, to: fitter, limits: EdgeLimits(items: 4))
      pipeline.connect(fitter, to: encoder, limits: EdgeLimits(items: 4))
      pipeline.connect(encoder, to: writer, limits: EdgeLimits(items: 64, bytes: 16 << 20))
      sources.append(source)
    }
    if let audio, let audioID {
      let source = TrackSource(name: "AudioTrack", track: audio, capacity: 64)
      let gate = RecordingGate(name: "AudioGate", timeline: timeline)
      // Sound that starts after the picture (a file whose sound begins seconds in) is preceded by silence
      // from the file's start, as far as the writer waits for a track's first packet: the file has no
      // other way to place it (each fragmented track starts at 0), and it stays in step with the picture.
      let encoder = AudioEncoder(track: audioID, origin: origin, maximumLead: trackWait)
      pipeline.connect(source, to: gate, limits: EdgeLimits(items: 16))
      pipeline.connect(gate, to: encoder, limits: EdgeLimits(items: 16))
      pipeline.connect(encoder, to: writer, limits: EdgeLimits(items: 256, bytes: 4 << 20))
      sources.append(source)
    }
    self.sources = sources
  }

  deinit {
    pipeline.stop()
    // The last reference may go on the recording's own thread, which cannot wait for itself to end.
    let executor = self.executor
    DispatchQueue.global().async { executor.shutdown() }
  }

  /// Starts recording; `onEnd` gets the file's duration once it is complete, or why it is not (on the
  /// recording's thread).
  func start(onEnd: @escaping @Sendable (Result<MediaDuration, MediaError>) -> Void) throws {
    let writer = self.writer
    let ended = self.ended
    let pipeline = self.pipeline
    pipeline.errorHandler = { failure in
      if ended.withLock({ done in
        defer { done = true }; return !done
      }) {
        onEnd(.failure(MediaError(failure)))
      }
      return .stopPipeline
    }
    pipeline.onEndOfStream = { _ in
      guard
        ended.withLock({ done in
          defer { done = true }; return !done
        })
      else { return }
      onEnd(
        writer.value.isFinished
          ? .success(writer.value.duration) : .failure(MediaError(.writeFailed, "the file was not completed")))
    }
    try pipeline.start()
  }

  /// Leaves out the tracks' frames from source time `time` until ``resume(at:)``.
  func pause(at time: MediaTime) { timeline.pause(at: time) }

  /// Keeps the tracks' frames again from source time `time`.
  func resume(at time: MediaTime) { timeline.resume(at: time) }

  /// Leaves out `range` of source time (nothing of any track in it), from any thread.
  func leaveOut(_ range: MediaRange) { timeline.leaveOut(range) }

  /// Ends the recording after what the tracks queued: the file is completed.
  func stop() { for source in sources { source.close() } }

  /// Stops at once: the file is closed as it is (readable up to its last fragment).
  func abort() { pipeline.stop() }
}
