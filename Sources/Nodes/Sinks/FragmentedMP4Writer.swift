import Foundation
import PipelineGraph

/// Writes encoded video (H.264/H.265) and AAC audio into a fragmented MP4, in place: the file a
/// recorder of decoded media makes (seed 003's TrackRecorder). Packet times are the file's own (0 is its
/// start); the file is written as it goes, one `moof`+`mdat` fragment per second of media, handed to the
/// kernel as each is made, so a process killed while recording leaves a file that plays up to its last
/// fragment. At the end of the stream the last fragment is written on the pipeline's workers, and the
/// file stays fragmented (without a fragment index: players find the fragments by reading the boxes).
///
/// The file's tracks are declared when it is created: it waits until every declared track has its
/// first packet (video from its first keyframe), or until ``trackWait`` of one track's media (or
/// ``waitingBytes`` of its packets) came without the other's, or the stream's end — then the file has only
/// the tracks that came (a branch's ``TrackEnded`` is no sign: its encoder may still hold its last
/// pictures or sound) (a track whose first packet starts more than ``trackWait``
/// after the other's is left out as well, however early it came). A live track's media comes in real time and a camera
/// may have no sound at all: 10 s (``liveTrackWait``). A file's sound may start minutes into it, and
/// comes as fast as the file is read: the wait is longer (``fileTrackWait``). Packets of other tracks or
/// formats are skipped (``skippedPackets``).
///
/// States: waiting → writing → finished at the end of the stream (``isFinished``), or stopped before
/// that: the file is closed as it is (readable up to its last fragment), never removed. Confined to its
/// pipeline's executor; the end runs on the pipeline's workers.
public final class FragmentedMP4Writer: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  /// The file.
  public let destination: URL
  /// The video track written, if any.
  public let videoTrack: TrackID?
  /// The audio track written, if any.
  public let audioTrack: TrackID?
  /// How much of one track's media the file waits through for a declared track's first packet.
  public let trackWait: MediaDuration
  /// The wait for live tracks.
  public static let liveTrackWait = MediaDuration.microseconds(10_000_000)
  /// The wait for a file's tracks (a recorder's sound is preceded by silence up to it: 2 minutes of
  /// silence cost ~0.4 s to encode).
  public static let fileTrackWait = MediaDuration.microseconds(120_000_000)
  /// The most bytes of packets held while waiting, whatever ``trackWait`` says.
  public static let waitingBytes = 64 << 20
  private var waitingSize = 0
  private var file: MP4File?
  private var videoFormat: TrackFormat?
  private var audioFormat: TrackFormat?
  private var waiting: [EncodedPacket] = []
  private var lastVideo: MediaDuration?
  private var lastAudio: MediaDuration?
  /// Packets not written.
  public private(set) var skippedPackets = 0
  /// Video and audio packets written.
  public private(set) var written = (video: 0, audio: 0)
  /// Where the written media ends, from the file's start.
  public private(set) var duration = MediaDuration.zero
  /// True once the file is complete.
  public private(set) var isFinished = false

  /// A writer of `videoTrack` and `audioTrack` (at least one) into `destination`, which it creates or
  /// truncates: the caller has reserved the name. It waits `trackWait` of one track's media for the
  /// other's first packet.
  /// - Throws: ``MediaError`` `invalidArgument` without a track.
  public init(
    name: String = "FragmentedMP4Writer", destination: URL, videoTrack: TrackID?, audioTrack: TrackID?,
    trackWait: MediaDuration = FragmentedMP4Writer.liveTrackWait
  ) throws {
    guard videoTrack != nil || audioTrack != nil else {
      throw MediaError(.invalidArgument, "a recording needs a track")
    }
    self.name = name
    self.destination = destination
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.trackWait = trackWait
  }

  /// Writes one packet (or keeps it until the file exists).
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    let isVideo = input.track == videoTrack && videoTrack != nil
    let isAudio = input.track == audioTrack && audioTrack != nil
    guard
      isVideo && (input.format.codec == .h264 || input.format.codec == .h265) || isAudio && input.format.codec == .aac
    else { return skippedPackets += 1 }
    guard let file else {
      if isVideo {
        guard videoFormat != nil || input.isKeyframe else { return skippedPackets += 1 }
        videoFormat = videoFormat ?? input.format
      } else {
        audioFormat = audioFormat ?? input.format
      }
      waiting.append(input)
      waitingSize += input.data.count
      return try openWhenReady(force: false)
    }
    try write(input, to: file)
  }

  private func write(_ packet: EncodedPacket, to file: MP4File) throws {
    let time = try packet.time - MediaTime(microseconds: 0)
    let end = try time + packet.duration
    if packet.track == videoTrack {
      guard let format = videoFormat, GapDetector.sameVideo(packet.format, format), time >= (lastVideo ?? .zero) else {
        return skippedPackets += 1
      }
      try file.writeVideo(packet.data, time: time, duration: packet.duration, isKeyframe: packet.isKeyframe)
      lastVideo = end
      written.video += 1
    } else {
      guard let format = audioFormat, format == packet.format, time >= (lastAudio ?? .zero) else {
        return skippedPackets += 1
      }
      try file.writeAudio(packet.data, time: time, duration: packet.duration)
      lastAudio = end
      written.audio += 1
    }
    duration = max(duration, end)
  }

  /// Creates the file once every declared track has its format, or one track has ``trackWait`` of media
  /// (or ``waitingBytes``) without the other (`force`: at the end, with what came).
  private func openWhenReady(force: Bool) throws {
    guard file == nil, let first = waiting.first else { return }
    let complete = (videoTrack == nil || videoFormat != nil) && (audioTrack == nil || audioFormat != nil)
    let span = (try? waiting.last!.time - first.time) ?? .zero
    guard complete || force || span >= trackWait || waitingSize >= Self.waitingBytes else { return }
    // A track starting more than the wait after the other's start came in time only because its branch
    // ran ahead of the other's (a picture delayed by its encoder): the wait is over in media time, and it
    // cannot be placed that late (each of the file's tracks starts with its first sample) — left out.
    let start = { (track: TrackID?) in self.waiting.first { $0.track == track }?.time }
    if let video = start(videoTrack), let audio = start(audioTrack) {
      if let late = try? audio - video, late > trackWait { audioFormat = nil }
      if let late = try? video - audio, late > trackWait { videoFormat = nil }
    }
    let file = try MP4File(
      path: destination.path, video: videoFormat, audio: audioFormat, reservedIndexBytes: 8)
    self.file = file
    let packets = waiting
    waiting = []
    waitingSize = 0
    for packet in packets { try write(packet, to: file) }
  }

  /// Writes the last fragment on the pipeline's workers; the end of stream follows once the file is
  /// complete.
  public func finish(context: NodeContext<Never>) throws {
    try openWhenReady(force: true)
    guard let file else { throw MediaError(.noMedia, "nothing was recorded") }
    self.file = nil
    context.holdEndOfStream()
    let handoff = ExecutorConfined(file)
    context.runOnWorker {
      Result { try handoff.value.finishFragmented() }.mapError { MediaError($0) }
    } then: { [unowned self] result in
      switch result {
      case .success: isFinished = true
      case .failure(let error): context.fail(error)
      }
      context.releaseEndOfStream()
    }
  }

  /// Closes the file as it is: what was written up to the last fragment stays readable.
  public func stop(context: NodeContext<Never>) {
    file?.close()
    file = nil
    waiting = []
    waitingSize = 0
  }
}
