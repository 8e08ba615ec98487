import Foundation
import PipelineGraph

/// One stretch of recordings as a fragment of a stream: the initialization section (`ftyp` + `moov`)
/// and the media (`moof` + `mdat`) of an HLS fMP4 segment or of what a page appends to a Media Source
/// Extensions buffer. The media's times are those of a stream that starts at an origin (a range's
/// start): segments made one by one line up, with the recordings' gaps as holes.
public struct StreamSegment: Sendable {
  /// `ftyp` + `moov`: what a player takes before the first segment of a run (`EXT-X-MAP`).
  public let initialization: Data
  /// `moof` + `mdat` pairs, their decode times on the stream's timeline.
  public let media: Data
  /// Pictures in ``media``.
  public let videoFrames: Int
  /// Audio frames in ``media``.
  public let audioFrames: Int
  /// Where the first picture (else the first audio frame) is, from the stream's origin.
  public let start: MediaDuration
}

/// Makes ``StreamSegment``s by stream copy — nothing transcoded: `CloudSegmentSource → SegmentVerifier →
/// SegmentDemuxer → collector`, then the packets of the segment's stretch written as a fragmented MP4
/// (`MP4File`) and split (`FragmentSplitter`). What `tipipe serve` answers for HLS.
///
/// A segment covers what was recorded in its stretch: H.264/H.265 video of one channel, and AAC audio of
/// another when asked (other audio codecs are left out: a browser plays AAC). The stretch before it is
/// read too (`reading`) when the segment continues the one before it, so that a picture of a GOP that
/// began in the previous object has its format; a segment that starts a run (after a gap, or clipped at
/// the start of a range) starts at its first keyframe: the pictures before it could not be decoded.
public enum StreamSegmentGraph {
  /// The segment of `stretch`, on the timeline that starts at `origin`, reading `reading` (which
  /// contains `stretch`) of the recordings `service` holds with `token`; only objects `accepting`
  /// accepts are read. A `reading` that starts before `stretch` says the segment continues the one
  /// before it in the stream (what is read before it gives the pictures' format and may begin a GOP
  /// that the player decoded); else the segment starts at its first keyframe.
  /// - Throws: ``MediaError`` `noMedia` when the stretch holds nothing of the tracks; the
  ///   graph's failure (listing, token, a node) as it is.
  public static func make(
    from service: any RecordingService, token: String, stretch: MediaRange, reading: MediaRange, origin: MediaTime,
    videoChannel: UInt8, audioChannel: UInt8?,
    accepting: @escaping @Sendable (RecordingIndex.Segment) -> Bool = { _ in true }
  ) throws -> StreamSegment {
    let source = CloudSegmentSource(
      service: service, range: reading, token: token, prefetchBytes: 8 << 20, objectFilter: accepting)
    let collector = SegmentPacketCollector(
      stretch: stretch, continuing: reading.start < stretch.start, video: TrackID(.video, channel: videoChannel),
      audio: audioChannel.map { TrackID(.audio, channel: $0) })
    let executor = ThreadExecutor(name: "tipipe.segment")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer(startingAt: nil, endingAt: reading.end)
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 4))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 4))
    pipeline.connect(demuxer, to: collector, limits: EdgeLimits(items: 256))
    let outcome = try pipeline.runToCompletion()
    if let failure = outcome.failures.first { throw MediaError(failure.error) }
    return try write(collector.video, collector.audio, origin: origin)
  }

  /// Writes the packets (each list in time order) as a fragmented MP4, each track from its first packet,
  /// and splits it with each track moved to where its first packet is on the stream.
  static func write(_ video: [EncodedPacket], _ audio: [EncodedPacket], origin: MediaTime) throws -> StreamSegment {
    guard let first = video.first ?? audio.first else {
      throw MediaError(.noMedia, "nothing of the tracks was recorded in the segment's stretch")
    }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("tipipe-segment-\(UUID().uuidString).mp4")
      .path
    defer { unlink(path) }
    let file = try MP4File(path: path, video: video.first?.format, audio: audio.first?.format, reservedIndexBytes: 8)
    let videoStart = video.first?.time ?? first.time
    let audioStart = audio.first?.time ?? first.time
    // Interleaved by the file's time (each track from 0: its first packet), so that each fragment holds
    // about the same second of both tracks, as libavformat's interleaving muxer wrote them. In the
    // stream's time the audio may run a GOP ahead of the video, and the first fragment then held one
    // picture: Chromium's Media Source reported the holes before the first keyframe and at a gap as
    // buffered, so the page never jumped them (PlayerPageTests).
    var (v, a) = (0, 0)
    while v < video.count || a < audio.count {
      var videoNext = v < video.count
      if videoNext, a < audio.count { videoNext = try video[v].time - videoStart <= audio[a].time - audioStart }
      if videoNext {
        let packet = video[v]
        try file.writeVideo(
          packet.data, time: try packet.time - videoStart, decodeTime: try packet.decodeTime - videoStart,
          duration: packet.duration, isKeyframe: packet.isKeyframe)
        v += 1
      } else {
        let packet = audio[a]
        try file.writeAudio(packet.data, time: try packet.time - audioStart, duration: packet.duration)
        a += 1
      }
    }
    try file.finishFragmented()
    let bytes: Data
    do {
      bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
      throw MediaError(.writeFailed, "reading the segment back: \(error.localizedDescription)")
    }
    do {
      let (initialization, media) = try FragmentSplitter.split(
        bytes, videoShift: try videoStart - origin, audioShift: try audioStart - origin)
      return StreamSegment(
        initialization: initialization, media: media, videoFrames: video.count, audioFrames: audio.count,
        start: try first.time - origin)
    } catch let error as MP4Error {
      throw MediaError(.writeFailed, "splitting the segment: \(error)")
    }
  }
}

/// Keeps the packets of a segment's stretch: video of one track from a keyframe on (a picture whose GOP
/// began before the stretch is kept once a keyframe of that GOP was read), in one codec (an H.264 size
/// may change at a keyframe); AAC audio of another, in one format (another rate or channel count cannot
/// follow in one fMP4 track: left out). Confined to its pipeline's executor; read after the graph ended.
final class SegmentPacketCollector: Node {
  typealias Input = EncodedPacket
  typealias Output = Never

  let stretch: MediaRange
  let videoTrack: TrackID
  let audioTrack: TrackID?
  private(set) var video: [EncodedPacket] = []
  private(set) var audio: [EncodedPacket] = []
  /// A keyframe of the current recording stretch was read: the pictures after it can be decoded.
  private var decodable = false
  private var objectEnd: MediaTime?

  /// The segment follows another of the stream without a hole (its first pictures may depend on it).
  let continuing: Bool

  init(stretch: MediaRange, continuing: Bool, video: TrackID, audio: TrackID?) {
    self.stretch = stretch
    self.continuing = continuing
    videoTrack = video
    audioTrack = audio
  }

  func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    let inside = input.time >= stretch.start && input.time < stretch.end
    if input.track == videoTrack {
      // A segment that continues the one before it in a stream may start inside a GOP (the player
      // decoded its keyframe with the segment before); one that starts a run starts at a keyframe.
      if input.isKeyframe, continuing || inside { decodable = true }
      guard decodable, inside else { return }
      // Another H.264 picture size inside the segment (a camera may change it at a keyframe, inside an
      // object): its keyframe carries its SPS and PPS in-band, as a run's later objects do under the
      // run's one init section. Not H.265 (its `hvc1` entry says the parameter sets are in the init
      // section only, which a player such as Safari may hold to), nor another codec: left out.
      if let first = video.first,
        input.format.codec != first.format.codec
          || (first.format.codec != .h264 && !GapDetector.sameVideo(input.format, first.format))
      {
        return
      }
      guard input.format.codec == .h264 || input.format.codec == .h265 else { return }
      video.append(input)
    } else if input.track == audioTrack, inside, input.format.codec == .aac {
      if let first = audio.first, first.format != input.format { return }
      audio.append(input)
    }
  }

  /// A lost object or a hole between two objects: decoding starts afresh after it.
  func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    switch event {
    case .gap: decodable = false
    case .rangeStart(let range):
      if let objectEnd, range.start > objectEnd { decodable = false }
      objectEnd = range.end
    default: break
    }
  }
}
