import Foundation
import PipelineGraph

/// Records what reaches it into an MP4 (stream copy): one video track and optionally one AAC track,
/// timed from the first video keyframe, gaps kept as they are (a recording, not an export).
///
/// The file's tracks are declared when it is created, so it waits until every declared track has its
/// first packet: the video's first keyframe and the audio's first packet (audio usually follows video in
/// a file's order), or ``audioWait`` of video without audio. A sound that begins later still joins the
/// file (its track is declared then, in the room kept for the index) from its first packet on; ``gaps``
/// says where the declared sound is missing, never a silently missing stream.
///
/// It writes through `MP4Recording` (the path it shares with the ``Exporter``) in one stretch: the
/// file is written fragmented under a working name beside `destination` and, at the end of the stream,
/// finalized into an ordinary MP4 with its index at the front under `destination`. Packets before the
/// first keyframe, of other tracks, or in another video format than the first are skipped
/// (``skippedPackets`` counts them).
///
/// States: waiting for the first keyframe → recording → finalized at the end of the stream
/// (``isFinalized``), or stopped before that (the unfinished file is removed). Confined to its
/// pipeline's executor; only the finalization runs on the pipeline's workers.
public final class MP4Writer: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "MP4Writer"
  /// The final file.
  public let destination: URL
  /// The video track recorded.
  public let videoTrack: TrackID
  /// The audio track recorded, if any.
  public let audioTrack: TrackID?
  private var recording: MP4Recording?
  /// Until the file exists: video from its first keyframe, and audio.
  private var start: MP4StartBuffer
  /// The declared audio track the file was made without, why, from when, and until when (its first
  /// packet, when it came later and the file took it).
  private var missingAudio: (track: TrackID, reason: GapReason, from: MediaTime, until: MediaTime?)?
  /// How long the file waits for the declared audio track's first packet: 10 s of video (a camera's or a
  /// file's sound may start seconds after its picture; the file's tracks are declared before any sample).
  public static let audioWait = MediaDuration.microseconds(10_000_000)
  /// The most video bytes held while waiting for it (what ``audioWait`` of a high-rate picture comes to
  /// first).
  public static let audioWaitBytes = 16 << 20
  /// What the file lacks, once it is finished: the declared audio track from the file's start to its
  /// first AAC packet (`trackUnavailable`), or over the whole recording when none came or it was not AAC
  /// (`unsupportedMedia`).
  public private(set) var gaps: [RecordingGap] = []
  /// Packets not recorded.
  public private(set) var skippedPackets = 0
  /// True once the final file exists.
  public private(set) var isFinalized = false

  /// Room reserved for the final index (1 MB: about 13 minutes); a longer recording is finalized by a
  /// remux instead of in place.
  public let reservedIndexBytes: Int

  /// Records `videoTrack` (and `audioTrack`) into `destination`.
  public init(destination: URL, videoTrack: TrackID, audioTrack: TrackID? = nil, reservedIndexBytes: Int = 1 << 20) {
    self.destination = destination
    self.reservedIndexBytes = reservedIndexBytes
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    start = MP4StartBuffer(expectsAudio: audioTrack != nil)
  }

  /// Writes one packet.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    if input.track == audioTrack {
      guard let recording else {
        start.hold(audio: input)
        return try openWhenReady(force: false)
      }
      if recording.audio == nil, recording.addAudio(input.format), missingAudio?.until == nil {
        missingAudio?.until = input.time
      }
      guard let audio = recording.audio, input.format.codec == .aac, input.format.sampleRate == audio.sampleRate
      else { return skippedPackets += 1 }
      return try recording.writeAudio(input)
    }
    guard input.track == videoTrack else { return skippedPackets += 1 }
    guard let recording else {
      guard start.hold(video: input) else { return skippedPackets += 1 }
      return try openWhenReady(force: false)
    }
    guard GapDetector.sameVideo(input.format, recording.video) else { return skippedPackets += 1 }
    try recording.writeVideo(input)
  }

  /// Creates the file once every declared track has its format: the audio's first packet came, or
  /// ``audioWait`` of video went by without one (the file then has no audio track, and ``gaps`` says so).
  private func openWhenReady(force: Bool) throws {
    guard recording == nil, start.isReady(force: force), let first = start.first else { return }
    let audioFormat = start.audioFormat
    try OutputFile.validate(destination)
    let audio = audioTrack == nil ? nil : audioFormat.flatMap { $0.codec == .aac ? $0 : nil }
    let recording = try MP4Recording(
      workingPath: OutputFile.workingPath(for: destination), video: first.format, audio: audio,
      reservedIndexBytes: reservedIndexBytes)
    recording.begin(at: first.time)
    self.recording = recording
    if let audioTrack, audio == nil {
      let reason: GapReason = audioFormat == nil ? .trackUnavailable : .unsupportedMedia
      missingAudio = (audioTrack, reason, first.time, nil)
    }
    let (video, sound) = start.take()
    for packet in video {
      if GapDetector.sameVideo(packet.format, recording.video) {
        try recording.writeVideo(packet)
      } else {
        skippedPackets += 1
      }
    }
    for packet in sound {
      if audio != nil, packet.format.codec == .aac { try recording.writeAudio(packet) } else { skippedPackets += 1 }
    }
  }

  /// Finalizes the file at the end of the stream, on the pipeline's workers (finishing an MP4 reads
  /// and writes its index, or remuxes it: blocking disk I/O stays off the graph's thread); the end of
  /// stream follows once the file is in place.
  public func finish(context: NodeContext<Never>) throws {
    try openWhenReady(force: true)
    guard let recording else { throw MediaError(.noMedia, "nothing was recorded") }
    let written = try recording.end(at: MediaTime(microseconds: .max))
    // (Only when the sound's frames were written from `until` on: a sound the file could not take, or whose
    // frames all fell outside what was recorded, is missing over the whole recording.)
    if let missing = missingAudio {
      let joined = missing.until.flatMap { recording.audioPackets > 0 ? $0 : nil }
      let end = joined ?? written?.end ?? missing.from
      if end > missing.from {
        gaps.append(
          RecordingGap(
            range: MediaRange(start: missing.from, end: end), tracks: [missing.track], reasons: [missing.reason]))
      }
    }
    self.recording = nil
    context.holdEndOfStream()
    // The recording is handed whole to the worker: nothing here touches it any more.
    let handoff = ExecutorConfined(recording)
    let destination = self.destination
    context.runOnWorker {
      Result { try handoff.value.finalize(installingAt: destination) }.mapError { MediaError($0) }
    } then: { [unowned self] result in
      switch result {
      case .success: isFinalized = true
      case .failure(let error): context.fail(error)
      }
      context.releaseEndOfStream()
    }
  }

  /// An unfinished recording is closed and removed.
  public func stop(context: NodeContext<Never>) {
    recording?.abandon()
    recording = nil
    start.drop()
  }
}
