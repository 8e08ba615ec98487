import Foundation
import PipelineGraph
import Synchronization

/// The export sink: writes the requested range's video track (and optionally one audio track) into one
/// MP4 whose timeline cuts the gaps out, and keeps the account of what it holds (``ExportTimeline``).
///
/// It sits behind a ``GapDetector`` configured for a file (`writesFile`): the detector decides what is a
/// gap and drops what a file cannot hold; the exporter only follows. A gap event of the video track
/// ends the stretch being written (at the gap's start) and the next video packet, a keyframe, begins
/// the next one; every gap event goes to the timeline. The file's streams are declared up front, so
/// the first packets wait until the audio format is known (or ``MP4Writer/audioWait`` of video, or
/// ``MP4Writer/audioWaitBytes`` of it, passed without audio, or a gap of the video came); a sound that
/// begins after the file was made gets its track then (declared in the room kept for the index).
/// Writing goes through `MP4Recording`, the path it shares with ``MP4Writer``.
///
/// Progress is the scanned fraction of the range, monotonic; `onProgress` gets coalesced values.
public final class Exporter: Node {
  /// Consumes packets of the selected tracks.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// What to export.
  public struct Configuration: Sendable {
    /// The requested range.
    public var range: MediaRange
    /// The video track the file follows.
    public var videoTrack: TrackID
    /// The audio track, if any.
    public var audioTrack: TrackID?
    /// Where the unfinished (fragmented) file is written.
    public var workingPath: String
    /// The room reserved for the final index: nil sizes it from the range and the frame rate; an index
    /// that does not fit is finalized by a remux instead (slower, same file).
    public var reservedIndexBytes: Int? = nil

    /// Creates a configuration.
    public init(range: MediaRange, videoTrack: TrackID, audioTrack: TrackID?, workingPath: String) {
      self.range = range
      self.videoTrack = videoTrack
      self.audioTrack = audioTrack
      self.workingPath = workingPath
    }

    /// The gap detector an export needs in front of its exporter.
    public var gapDetector: GapDetector.Configuration {
      GapDetector.Configuration(range: range, videoTrack: videoTrack, audioTrack: audioTrack, writesFile: true)
    }
  }

  /// The node's name.
  public let name = "Exporter"
  /// The configuration.
  public let configuration: Configuration
  /// Called with (progress, covered ms) as the scan advances; values never decrease.
  public var onProgress: ((Double, Int64) -> Void)?
  /// Called with each gap event the exporter gets (video and audio), clipped to the range.
  public var onGap: ((RecordingGap) -> Void)?

  private var recording: MP4Recording?
  private var timeline: ExportTimeline
  /// Until the file exists: video from its first keyframe, and audio.
  private var start: MP4StartBuffer
  private var reportedProgress = 0.0
  private var reportedCovered: Int64 = 0
  /// Set from any thread by ``requestStop()``; read before each input.
  private let stopRequested = Atomic<Bool>(false)

  /// Creates an exporter.
  public init(configuration: Configuration) {
    self.configuration = configuration
    start = MP4StartBuffer(expectsAudio: configuration.audioTrack != nil)
    timeline = ExportTimeline(
      range: configuration.range, videoTrack: configuration.videoTrack, audioTrack: configuration.audioTrack)
  }

  private var rangeEnd: MediaTime { configuration.range.end }

  // MARK: Input

  /// Stops taking input at once, from any thread: the report then accounts for what was written before
  /// the request, whatever was still queued (a cancelled or stopped task ends where it was asked to).
  public func requestStop() { stopRequested.store(true, ordering: .releasing) }

  /// Writes a packet of the video or audio track.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    guard !stopRequested.load(ordering: .acquiring) else { return }
    if input.track == configuration.videoTrack {
      try video(input)
    } else if input.track == configuration.audioTrack {
      try audio(input)
    }
    scan(through: input.time.advanced(by: input.duration, notAfter: rangeEnd))
  }

  private func video(_ packet: EncodedPacket) throws {
    guard let recording else {
      // Until the file exists, keep everything from the first keyframe inside the range.
      // Decoded before the end: a frame shown after it may be the reference of B-frames before it.
      guard packet.decodeTime < rangeEnd, start.hold(video: packet) else { return }
      return try openFile(force: false)
    }
    if !recording.isRecording {
      guard packet.isKeyframe, packet.time < rangeEnd else { return }
      recording.begin(at: packet.time)
    }
    try recording.writeVideo(packet)
  }

  private func audio(_ packet: EncodedPacket) throws {
    guard let recording else {
      start.hold(audio: packet)
      return try openFile(force: false)
    }
    // A sound that begins after the file was made without it (10 s of picture first, or a gap before it)
    // gets its track now.
    if recording.audio == nil { _ = recording.addAudio(packet.format) }
    try recording.writeAudio(packet)
  }

  /// Creates the file once ``MP4StartBuffer`` says it can be, or `force`.
  private func openFile(force: Bool) throws {
    guard recording == nil, start.isReady(force: force), let first = start.first else { return }
    let audio = configuration.audioTrack == nil ? nil : start.audioFormat
    // The first frame's duration (the demuxer's look-ahead) gives the frame rate; AAC has 1024-sample frames.
    let videoRate = 1_000_000 / Double(max(1_000, first.duration.microseconds))
    // Sound asked for but not come yet may join later (MP4Recording.addAudio): its index is budgeted too,
    // at the highest usual rate (an index that outgrows its room costs a remux of the whole file).
    let audioRate =
      audio.map { Double($0.sampleRate) / 1024 } ?? (configuration.audioTrack == nil ? 0 : 48_000.0 / 1024)
    let recording = try MP4Recording(
      workingPath: configuration.workingPath, video: first.format, audio: audio, limit: rangeEnd,
      reservedIndexBytes: configuration.reservedIndexBytes
        ?? MP4File.indexBytes(
          forSeconds: configuration.range.duration.milliseconds / 1000 + 1,
          samplesPerSecond: (videoRate + audioRate) * 1.25),
      // Kept only when complete: 8-second fragments (a tenth of an hour's fragment index), blocks ahead.
      use: .export)
    self.recording = recording
    timeline.fileHasAudio = audio != nil
    recording.begin(at: first.time)
    let (video, sound) = start.take()
    // In arrival order is not needed: audio waits for the video to reach it.
    for packet in video { try recording.writeVideo(packet) }
    for packet in sound { try recording.writeAudio(packet) }
  }

  /// Gap events go to the timeline; one of the video track ends the stretch being written.
  public func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    guard !stopRequested.load(ordering: .acquiring), case .gap(let gap) = try MediaEvent(event) else { return }
    timeline.record(gap)
    if let clipped = gap.range.clamped(to: configuration.range) {
      onGap?(RecordingGap(range: clipped, tracks: gap.tracks, reasons: gap.reasons))
    }
    if gap.concerns(configuration.videoTrack) {
      try openFile(force: true)
      try endStretch(at: gap.range.start, keepAudioFrom: gap.range.end)
    }
    scan(through: min(gap.range.end, rangeEnd))
  }

  private func endStretch(at end: MediaTime, keepAudioFrom: MediaTime? = nil) throws {
    guard let recording, let written = try recording.end(at: end, keepAudioFrom: keepAudioFrom) else { return }
    timeline.add(stretch: written)
  }

  /// Closes the last stretch; progress is told once more when that added to what is covered (E13: the
  /// last covered value is the report's).
  public func finish(context: NodeContext<Never>) throws {
    guard !stopRequested.load(ordering: .acquiring) else { return }
    try openFile(force: true)
    try endStretch(at: rangeEnd)
    if coveredDurationMs > reportedCovered {
      reportedCovered = coveredDurationMs
      onProgress?(reportedProgress, coveredDurationMs)
    }
  }

  // MARK: Results

  /// True once media of the range has been written: video, of which a picture reaches the range (a
  /// keyframe cut copies the group of pictures leading into the range, and when none of its pictures
  /// reaches it — a hole in the stream from before its start to past its end — the range has none).
  public var hasMedia: Bool {
    writtenVideoPackets > 0
      && (timeline.stretches + (recording?.openRange.map { [$0] } ?? [])).contains { $0.end > timeline.range.start }
  }

  /// Packets written, by track kind (for tests and statistics).
  public var writtenVideoPackets: Int { recording?.videoPackets ?? closed.video }
  /// Audio packets written.
  public var writtenAudioPackets: Int { recording?.audioPackets ?? closed.audio }
  /// Video packets left out because their decode time did not follow the previous one's.
  public var skippedVideoPackets: Int { recording?.skippedVideoPackets ?? closed.skipped }
  /// The counts of the recording once it is finished or abandoned.
  private var closed = (video: 0, audio: 0, skipped: 0)

  /// Source duration written, in milliseconds.
  public var coveredDurationMs: Int64 { timeline.coveredMilliseconds(open: recording?.openRange) }

  /// The file's duration in milliseconds (equal to the covered duration: gaps are cut out).
  public var outputDurationMs: Int64 { coveredDurationMs }

  /// Finishes the MP4 and puts the final, seekable file at `destination` (renamed into place; only a
  /// regular file there is replaced).
  public func finalizeFile(to destination: String) throws {
    guard let recording, hasMedia else {
      throw MediaError(.noMedia, "the range has no video that can be written")
    }
    keepOpenStretch()
    closed = (recording.videoPackets, recording.audioPackets, recording.skippedVideoPackets)
    self.recording = nil
    try recording.finalize(installingAt: URL(fileURLWithPath: destination))
  }

  /// Closes the unfinished file (cancel, stop, failure) and removes it.
  public func abandonFile() {
    keepOpenStretch()
    if let recording { closed = (recording.videoPackets, recording.audioPackets, recording.skippedVideoPackets) }
    recording?.abandon()
    recording = nil
  }

  /// A task that ends early keeps a stretch still open as far as it was written.
  private func keepOpenStretch() {
    guard let recording, let open = recording.openRange else { return }
    _ = try? recording.end(at: open.end)
    timeline.add(stretch: open)
  }

  /// The report, given how the task ended, the SDK's code for it and the failure that ended it (see
  /// ``ExportTimeline/report(termination:cause:failure:open:)``).
  public func report(termination: ExportTermination, cause: Int32, failure: MediaError.Kind? = nil) -> ExportReport {
    var timeline = timeline
    // A file made without sound that took it later has it: the sound's gap events say where it is missing.
    if writtenAudioPackets > 0 { timeline.fileHasAudio = true }
    return timeline.report(termination: termination, cause: cause, failure: failure, open: recording?.openRange)
  }

  // MARK: Helpers

  private func scan(through time: MediaTime) {
    timeline.scan(through: time)
    let fraction = timeline.progress
    if fraction - reportedProgress >= 0.005 || (fraction == 1 && reportedProgress < 1) {
      reportedProgress = fraction
      reportedCovered = coveredDurationMs
      onProgress?(fraction, reportedCovered)
    }
  }

  /// Forgets nothing: an export is not seekable (a new range needs a new task).
  public func flush(context: NodeContext<Never>) {}
}
