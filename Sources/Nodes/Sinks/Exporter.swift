import Foundation
import PipelineGraph
import Synchronization

/// The export sink: writes the requested range's video track (and optionally one audio track) into one
/// MP4 whose timeline cuts the gaps out, and keeps the exact account of what it holds
/// (``ExportReport``).
///
/// Rules (seed 000, ExportTask; `spec/cli.md`, `tipipe export`):
/// - The output follows the video track: a stretch without decodable video is a gap (its audio is cut
///   too); a stretch with video but without the requested audio is kept and reported as a gap of the
///   audio track.
/// - Each stretch written maps a source range to a contiguous stretch of the file: the first starts at
///   output 0, each next one where the previous ended, so the file lasts `coveredDurationMs`.
/// - Video of another codec or resolution than the file's is an incompatible stretch (`unsupportedMedia`)
///   until a keyframe in the file's format.
/// - Progress is the scanned fraction of the range, monotonic; `onProgress` gets coalesced values.
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
  }

  private struct OpenSegment {
    var sourceStart: Int64
    var outputStart: Int64
    var videoEnd: Int64
    var lastAudioEnd: Int64?
    /// True once a frame at or after the range's end was met: later frames in decode order may depend
    /// on it (B-frames), so nothing more is written.
    var reachedEnd = false
  }

  private struct Interval {
    var start: Int64
    var end: Int64
    var reasons: [GapReason]
  }

  /// The node's name.
  public let name = "Exporter"
  /// The configuration.
  public let configuration: Configuration
  /// Called with (progress, covered ms) as the scan advances; values never decrease.
  public var onProgress: ((Double, Int64) -> Void)?
  /// Called with each gap as it is found (video-level gaps are final only in the report).
  public var onGap: ((RecordingGap) -> Void)?

  private var file: MP4File?
  private var fileVideo: TrackFormat?
  private var fileAudio: TrackFormat?
  private var audioFormat: TrackFormat?
  private var startBuffer: [EncodedPacket] = []
  private var segment: OpenSegment?
  private var segments: [ExportReport.Segment] = []
  private var sourceSegments: [(start: Int64, end: Int64)] = []
  private var outputCursor: Int64 = 0
  private var videoGapIntervals: [Interval] = []
  /// The objects that reached the demuxer (from its `segmentStart` events): a stretch they cover without
  /// video of the channel is `trackUnavailable`, one no object covers `noRecording`.
  private var objectRanges: [(start: Int64, end: Int64)] = []
  private var audioGaps: [RecordingGap] = []
  private var incompatibleSince: Int64?
  private var pendingAudio: [EncodedPacket] = []
  private var pendingVideo: EncodedPacket?
  private(set) var scanPosition: Int64
  private var reportedProgress = 0.0
  /// Packets written, by track kind (for tests and statistics).
  public private(set) var writtenVideoPackets = 0
  /// Audio packets written.
  public private(set) var writtenAudioPackets = 0
  /// Set from any thread by ``requestStop()``; read before each input.
  private let stopRequested = Atomic<Bool>(false)
  /// Video packets left out because their decode time did not follow the previous one's.
  public private(set) var skippedVideoPackets = 0
  private var lastVideoDecodeTime: Int64?

  /// Creates an exporter.
  public init(configuration: Configuration) {
    self.configuration = configuration
    scanPosition = configuration.range.start.microseconds
  }

  private var rangeStart: Int64 { configuration.range.start.microseconds }
  private var rangeEnd: Int64 { configuration.range.end.microseconds }

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
      audioFormat = input.format
      try openFileIfReady(force: false)
      try audio(input)
    }
    advanceScan(to: Self.end(of: input.time.microseconds, lasting: input.durationMicroseconds, atMost: rangeEnd))
  }

  private func video(_ packet: EncodedPacket) throws {
    let time = packet.time.microseconds
    guard time < rangeEnd else {
      // The first frame past the end gives the last one its duration and ends the writing (frames after
      // it in decode order may depend on it).
      if segment != nil, file != nil, let fileVideo, Self.compatible(packet.format, fileVideo) {
        try writeVideo(packet)
      }
      return
    }
    if let fileVideo, !Self.compatible(packet.format, fileVideo) {
      if incompatibleSince == nil {
        try closeSegment(at: time)
        incompatibleSince = time
      }
      return
    }
    if file == nil {
      // Until the file exists (its streams are declared up front), keep everything from the first keyframe.
      // A file needs a picture size to declare its video track.
      guard (packet.isKeyframe && packet.format.width > 0 && packet.format.height > 0) || !startBuffer.isEmpty
      else { return }
      startBuffer.append(packet)
      try openFileIfReady(force: false)
      return
    }
    if segment == nil {
      guard packet.isKeyframe else { return }
      if let since = incompatibleSince {
        videoGapIntervals.append(Interval(start: since, end: time, reasons: [.unsupportedMedia]))
        incompatibleSince = nil
      }
      segment = OpenSegment(sourceStart: time, outputStart: outputCursor, videoEnd: time)
    }
    try writeVideo(packet)
  }

  /// Buffers the first packets until the audio format is known (MP4 streams are declared up front).
  private func openFileIfReady(force: Bool) throws {
    guard file == nil, let first = startBuffer.first else { return }
    let span = (startBuffer.last?.time.microseconds ?? 0) - first.time.microseconds
    let audioKnown = configuration.audioTrack == nil || audioFormat != nil
    guard force || audioKnown || span >= 2_000_000 else { return }
    var audio = configuration.audioTrack == nil ? nil : audioFormat
    if let format = audio, format.codec != .aac {
      audio = nil
      if let track = configuration.audioTrack {
        audioGaps.append(RecordingGap(range: configuration.range, tracks: [track], reasons: [.unsupportedMedia]))
      }
    }
    // The first frame's duration (the demuxer's look-ahead) gives the frame rate; AAC has 1024-sample frames.
    let videoRate = 1_000_000 / Double(max(1_000, first.durationMicroseconds))
    let audioRate = audio.map { Double($0.sampleRate) / 1024 } ?? 0
    file = try MP4File(
      path: configuration.workingPath, video: first.format, audio: audio,
      reservedIndexBytes: configuration.reservedIndexBytes
        ?? MP4File.indexBytes(
          forSeconds: configuration.range.durationMicroseconds / 1_000_000 + 1,
          samplesPerSecond: (videoRate + audioRate) * 1.25))
    fileVideo = first.format
    fileAudio = audio
    segment = OpenSegment(
      sourceStart: first.time.microseconds, outputStart: outputCursor, videoEnd: first.time.microseconds)
    let buffered = startBuffer
    startBuffer = []
    for packet in buffered { try writeVideo(packet) }
  }

  private func writeVideo(_ packet: EncodedPacket) throws {
    // Each frame is written once the next one (in decode order) gives its exact duration, or at the
    // segment's end.
    if let previous = pendingVideo {
      let step = packet.decodeTime.microseconds - previous.decodeTime.microseconds
      if step > SegmentDemuxer.maximumFrameDuration {
        // No frame for longer than a frame may last: the stretch ends with the previous frame (at its own
        // duration) and what follows is a gap; the next stretch starts at a keyframe.
        try closeSegment(at: rangeEnd)
        guard packet.isKeyframe, packet.time.microseconds < rangeEnd else { return }
        let time = packet.time.microseconds
        segment = OpenSegment(sourceStart: time, outputStart: outputCursor, videoEnd: time)
      } else {
        try emitVideo(previous, duration: step > 0 ? step : previous.durationMicroseconds)
      }
    }
    pendingVideo = packet
    try flushAudio(upTo: min(packet.time.microseconds, rangeEnd))
  }

  /// Writes a frame that lasts `duration` (until the next frame in decode order; for streams without
  /// B-frames, until the next frame), clipped at the range's end.
  private func emitVideo(_ packet: EncodedPacket, duration: Int64) throws {
    guard var open = segment, let file, !open.reachedEnd else { return }
    let start = packet.time.microseconds
    guard start < rangeEnd else {
      open.reachedEnd = true
      segment = open
      return
    }
    let stop = Self.end(of: start, lasting: duration, atMost: rangeEnd)
    guard stop > start else { return }
    // Decode times keep their distance to presentation times (B-frames decode before they are shown), so
    // a reordered stretch starts with a decode time before its output start; the muxer's signed
    // composition offsets bring the first one to zero.
    let decodeTime = open.outputStart + packet.decodeTime.microseconds - open.sourceStart
    // A stream whose decode times do not increase cannot be written; such a frame is left out.
    if let last = lastVideoDecodeTime, decodeTime <= last { return skippedVideoPackets += 1 }
    lastVideoDecodeTime = decodeTime
    try file.writeVideo(
      packet.data, time: open.outputStart + start - open.sourceStart, decodeTime: decodeTime, duration: stop - start,
      isKeyframe: packet.isKeyframe)
    writtenVideoPackets += 1
    open.videoEnd = max(open.videoEnd, stop)
    segment = open
  }

  private func audio(_ packet: EncodedPacket) throws {
    guard configuration.audioTrack != nil, packet.time.microseconds < rangeEnd else { return }
    pendingAudio.append(packet)
    if let pendingVideo { try flushAudio(upTo: min(pendingVideo.time.microseconds, rangeEnd)) }
    // Audio with no video to go with it is dropped; keep at most a few seconds waiting for video.
    if pendingAudio.count > 256 { pendingAudio.removeFirst(pendingAudio.count - 256) }
  }

  /// Writes the waiting audio frames that start before `limit` inside the open segment; with `segmentEnd`
  /// (the stretch is closing), only frames ending at most 20 ms after it, so the audio never runs past the
  /// video into the next stretch's place in the file.
  private func flushAudio(upTo limit: Int64, segmentEnd: Int64? = nil) throws {
    guard let file, fileAudio != nil, var open = segment else { return }
    while let packet = pendingAudio.first, packet.time.microseconds < limit {
      let time = packet.time.microseconds
      // While the stretch is open, a frame is written once the video reaches its end, so the audio
      // never runs past the video; when it closes, a frame may end up to 20 ms after the last frame.
      if segmentEnd == nil, time + packet.durationMicroseconds > limit { break }
      pendingAudio.removeFirst()
      if let segmentEnd, time + packet.durationMicroseconds > segmentEnd + 20_000 { continue }
      guard packet.format.codec == .aac, packet.format.sampleRate == fileAudio?.sampleRate,
        packet.format.channels == fileAudio?.channels
      else { continue }
      if time < open.sourceStart {
        // Audio that starts before the first video frame of the file (the AAC encoder's priming frame, a
        // frame that straddles the start) is kept as the audio track's lead-in, hidden by an edit list: a
        // decoder needs it to produce the first samples without a fade-in. Elsewhere it is cut.
        let end = time + packet.durationMicroseconds
        guard open.outputStart == 0, writtenAudioPackets == 0, end + 1_000 >= open.sourceStart else { continue }
        file.audioLeadIn = open.sourceStart - time
        try file.writeAudio(packet.data, time: time - open.sourceStart, duration: packet.durationMicroseconds)
        writtenAudioPackets += 1
        open.lastAudioEnd = end
        segment = open
        continue
      }
      let expected = open.lastAudioEnd ?? open.sourceStart
      if time - expected > 2 * max(packet.durationMicroseconds, 20_000), let track = configuration.audioTrack {
        reportAudioGap(
          RecordingGap(
            range: MediaRange(start: .init(microseconds: expected), end: packet.time), tracks: [track],
            reasons: [.trackUnavailable]))
      }
      // Never overlap the previous frame in the file: a frame that starts up to 2 ms early (ms-rounded
      // record times) is moved after it; one that starts earlier repeats audio already written.
      let previousEnd = open.lastAudioEnd ?? open.sourceStart
      if time < previousEnd - 2_000 { continue }
      let outputTime = open.outputStart + max(time, previousEnd) - open.sourceStart
      try file.writeAudio(packet.data, time: outputTime, duration: packet.durationMicroseconds)
      writtenAudioPackets += 1
      open.lastAudioEnd = max(time + packet.durationMicroseconds, open.lastAudioEnd ?? 0)
      segment = open
    }
  }

  private func reportAudioGap(_ gap: RecordingGap) {
    guard let clipped = clip(gap.range) else { return }
    var gap = gap
    gap.range = clipped
    audioGaps.append(gap)
    onGap?(gap)
  }

  /// Ends the open segment at the end of the last frame written (`limit` bounds the last frame).
  private func closeSegment(at limit: Int64) throws {
    if let pending = pendingVideo {
      let stop = Self.end(of: pending.time.microseconds, lasting: pending.durationMicroseconds, atMost: limit)
      try emitVideo(pending, duration: stop - pending.time.microseconds)
      pendingVideo = nil
    }
    guard let open = segment else { return }
    try flushAudio(upTo: open.videoEnd, segmentEnd: open.videoEnd)
    pendingAudio.removeAll()
    if let track = configuration.audioTrack, fileAudio != nil {
      let audioEnd = open.lastAudioEnd ?? open.sourceStart
      if open.videoEnd - audioEnd > 200_000 {
        reportAudioGap(
          RecordingGap(
            range: MediaRange(start: .init(microseconds: audioEnd), end: .init(microseconds: open.videoEnd)),
            tracks: [track], reasons: [.trackUnavailable]))
      }
    } else if let track = configuration.audioTrack, audioFormat == nil || audioFormat?.codec == .aac {
      // The file has no audio track: the requested channel never came (or came too late to be declared).
      reportAudioGap(
        RecordingGap(
          range: MediaRange(start: .init(microseconds: open.sourceStart), end: .init(microseconds: open.videoEnd)),
          tracks: [track], reasons: [.trackUnavailable]))
    }
    segment = nil
    guard open.videoEnd > open.sourceStart else { return }
    let length = open.videoEnd - open.sourceStart
    segments.append(
      ExportReport.Segment(
        sourceRange: .init(startMs: Self.ms(open.sourceStart), endMs: Self.ms(open.videoEnd)),
        outputStartMs: Self.ms(open.outputStart), outputEndMs: Self.ms(open.outputStart + length)))
    sourceSegments.append((open.sourceStart, open.videoEnd))
    outputCursor = open.outputStart + length
  }

  /// Gaps end the open stretch (when they concern video) and are kept for the report.
  public func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    guard !stopRequested.load(ordering: .acquiring) else { return }
    if case .segmentStart(let object) = event {
      // Objects arrive by start time (merged when they overlap): the list stays sorted.
      if let last = objectRanges.last, object.start <= last.end {
        objectRanges[objectRanges.count - 1].end = max(last.end, object.end)
      } else if let last = objectRanges.last, object.start < last.start {
        objectRanges.append((object.start, object.end))
        objectRanges.sort { $0.start < $1.start }
      } else {
        objectRanges.append((object.start, object.end))
      }
      return
    }
    guard case .gap(let gap as RecordingGap) = event else { return }
    let concernsVideo = gap.tracks.isEmpty || gap.tracks.contains(configuration.videoTrack)
    let concernsAudio = configuration.audioTrack.map { gap.tracks.isEmpty || gap.tracks.contains($0) } ?? false
    if concernsVideo {
      try openFileIfReady(force: true)
      try closeSegment(at: gap.range.start.microseconds)
      if let clipped = clip(gap.range) {
        videoGapIntervals.append(
          Interval(start: clipped.start.microseconds, end: clipped.end.microseconds, reasons: gap.reasons))
      }
    } else if concernsAudio, let track = configuration.audioTrack {
      reportAudioGap(RecordingGap(range: gap.range, tracks: [track], reasons: gap.reasons))
    }
    advanceScan(to: min(gap.range.end.microseconds, rangeEnd))
  }

  /// Closes the last stretch.
  public func finish(context: NodeContext<Never>) throws {
    try openFileIfReady(force: true)
    try closeSegment(at: rangeEnd)
    if let since = incompatibleSince {
      videoGapIntervals.append(Interval(start: since, end: rangeEnd, reasons: [.unsupportedMedia]))
      incompatibleSince = nil
    }
  }

  // MARK: Results

  /// True once some media has been written.
  public var hasMedia: Bool { writtenVideoPackets > 0 }

  /// Source duration written, in milliseconds.
  public var coveredDurationMs: Int64 { segments.reduce(0) { $0 + $1.sourceRange.durationMs } }

  /// The file's duration in milliseconds (equal to the covered duration: gaps are cut out).
  public var outputDurationMs: Int64 { Self.ms(outputCursor) }

  /// Finishes the MP4 and puts the final, seekable file at `destination` (renamed into place; only a
  /// regular file there is replaced).
  public func finalizeFile(to destination: String) throws {
    guard let file else { throw TiError(.noRecordableMedia, "the range has no video that can be written") }
    try file.finalize(installingAt: URL(fileURLWithPath: destination))
    self.file = nil
  }

  /// Closes the unfinished file (cancel, stop, failure); the caller removes it.
  public func abandonFile() {
    file?.close()
    file = nil
  }

  /// The report, given how the task ended. Gaps are the requested range's stretches outside the
  /// written segments (and before where the scan stopped), with the reasons the pipeline gave for them.
  public func report(termination: ExportTermination, cause: TiErrorCode) -> ExportReport {
    // Nothing to export is found only once the whole range was scanned.
    let scannedAll = termination == .exhausted || cause == .noRecordableMedia
    let scanned = scannedAll ? rangeEnd : min(scanPosition, rangeEnd)
    // A stretch still open (the task ended early) counts as far as it was written.
    var sourceSegments = self.sourceSegments
    var segments = self.segments
    if let open = segment, open.videoEnd > open.sourceStart {
      let length = open.videoEnd - open.sourceStart
      sourceSegments.append((open.sourceStart, open.videoEnd))
      segments.append(
        ExportReport.Segment(
          sourceRange: .init(startMs: Self.ms(open.sourceStart), endMs: Self.ms(open.videoEnd)),
          outputStartMs: Self.ms(open.outputStart), outputEndMs: Self.ms(open.outputStart + length)))
    }
    var gaps: [ExportReport.Gap] = []
    var tracks = [ExportReport.Track(configuration.videoTrack)]
    if let audio = configuration.audioTrack { tracks.append(ExportReport.Track(audio)) }
    var cursor = rangeStart
    for covered in sourceSegments + [(scanned, scanned)] {
      let holeEnd = min(covered.start, scanned)
      if holeEnd > cursor {
        let intervals = videoGapIntervals.filter { $0.start < holeEnd && $0.end > cursor }
        var unique: [GapReason] = []
        for reason in intervals.flatMap(\.reasons) where !unique.contains(reason) { unique.append(reason) }
        // What no gap event explains: without video of the channel where objects were read, else
        // without any recording.
        let explained = intervals.map { ($0.start, $0.end) }.sorted { $0.0 < $1.0 }
        for part in Self.subtract(explained, from: (cursor, holeEnd)) {
          let read = Self.subtract(objectRanges, from: part)
          let readLength = part.1 - part.0 - read.reduce(0) { $0 + $1.1 - $1.0 }
          if readLength > 0, !unique.contains(.trackUnavailable) { unique.append(.trackUnavailable) }
          if !read.isEmpty, !unique.contains(.noRecording) { unique.append(.noRecording) }
        }
        gaps.append(
          ExportReport.Gap(
            range: .init(startMs: Self.ms(cursor), endMs: Self.ms(holeEnd)), tracks: tracks,
            reasons: unique.isEmpty ? [.noRecording] : unique))
      }
      cursor = max(cursor, covered.end)
    }
    for gap in audioGaps {
      gaps.append(
        ExportReport.Gap(
          range: .init(startMs: gap.range.start.milliseconds, endMs: gap.range.end.milliseconds),
          tracks: gap.tracks.map(ExportReport.Track.init), reasons: gap.reasons))
    }
    gaps = gaps.filter { $0.range.durationMs > 0 }.sorted { $0.range < $1.range }
    let unprocessed =
      scanned < rangeEnd ? [ExportReport.Range(startMs: Self.ms(max(scanned, cursor)), endMs: Self.ms(rangeEnd))] : []
    let complete = termination == .exhausted && gaps.isEmpty && unprocessed.isEmpty
    return ExportReport(
      requestedRange: .init(
        startMs: configuration.range.start.milliseconds, endMs: configuration.range.end.milliseconds),
      coveredDurationMs: segments.reduce(0) { $0 + $1.sourceRange.durationMs }, segments: segments, gaps: gaps,
      unprocessedRanges: unprocessed.filter { $0.durationMs > 0 }, complete: complete, termination: termination,
      cause: cause.rawValue)
  }

  // MARK: Helpers

  private func advanceScan(to position: Int64) {
    guard position > scanPosition else { return }
    scanPosition = position
    let fraction = min(1, max(0, Double(position - rangeStart) / Double(max(1, rangeEnd - rangeStart))))
    if fraction - reportedProgress >= 0.005 || (fraction == 1 && reportedProgress < 1) {
      reportedProgress = fraction
      onProgress?(fraction, coveredDurationMs + (segment.map { Self.ms($0.videoEnd - $0.sourceStart) } ?? 0))
    }
  }

  private func clip(_ range: MediaRange) -> MediaRange? {
    let start = max(range.start, configuration.range.start)
    let end = min(range.end, configuration.range.end)
    return start < end ? MediaRange(start: start, end: end) : nil
  }

  private static func compatible(_ format: TrackFormat, _ file: TrackFormat) -> Bool {
    format.codec == file.codec && format.width == file.width && format.height == file.height
  }

  private static func ms(_ microseconds: Int64) -> Int64 { microseconds / 1000 }

  /// `start + duration`, but at most `limit`: a duration from outside (up to the distance between any
  /// two representable times) never overflows.
  private static func end(of start: Int64, lasting duration: Int64, atMost limit: Int64) -> Int64 {
    let (sum, overflow) = start.addingReportingOverflow(max(0, duration))
    return overflow ? limit : min(sum, limit)
  }

  /// The parts of `range` that none of `intervals` (sorted by start) covers, in order.
  private static func subtract(_ intervals: [(Int64, Int64)], from range: (Int64, Int64)) -> [(Int64, Int64)] {
    var parts: [(Int64, Int64)] = []
    var cursor = range.0
    for interval in intervals where interval.1 > cursor && interval.0 < range.1 {
      if interval.0 > cursor { parts.append((cursor, interval.0)) }
      cursor = max(cursor, interval.1)
    }
    if cursor < range.1 { parts.append((cursor, range.1)) }
    return parts
  }

  /// Forgets nothing: an export is not seekable (a new range needs a new task).
  public func flush(context: NodeContext<Never>) {}
}
