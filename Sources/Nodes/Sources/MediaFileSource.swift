import CFFmpeg
import Foundation
import PipelineGraph

/// Reads a standard media file (MP4, MKV, MPEG-TS… anything libavformat opens) and presents it as a
/// recording that starts at a given UTC time: H.264/H.265 video (converted to Annex B with in-band
/// parameter sets) and AAC (framed in ADTS) or G.711 audio, as ``EncodedPacket``s.
///
/// The first video stream becomes track (video, `videoChannel`), the first audio stream
/// (audio, `audioChannel`); other streams and codecs are skipped. Each track's format is announced by a
/// `formatChange` event before its first packet.
///
/// - Note: `av_read_frame` runs on the node's executor; for local files it is page-cache speed.
public final class MediaFileSource: SourceNode {
  /// Emits packets.
  public typealias Output = EncodedPacket

  private struct Track {
    var id: TrackID
    var format: TrackFormat
    var timeBase: TimeBase
    var filter: BitstreamFilter?
    var announced = false
  }

  /// The node's name.
  public let name = "MediaFileSource"
  private let path: String
  private let startTime: MediaTime
  private let videoChannel: UInt8
  private let audioChannel: UInt8
  private var input: InputFormatContext?
  private var tracks: [Int32: Track] = [:]
  private var packet: Packet?
  private var firstTimestamp: MediaDuration?

  /// Reads `path`, placing its first frame at `startTime`.
  public init(path: String, startTime: MediaTime, videoChannel: UInt8 = 0, audioChannel: UInt8 = 1) {
    self.path = path
    self.startTime = startTime
    self.videoChannel = videoChannel
    self.audioChannel = audioChannel
  }

  /// Opens the file and picks its streams.
  public func start(context: NodeContext<EncodedPacket>) throws {
    let input = try InputFormatContext(path: path)
    self.input = input
    packet = try Packet()
    var haveVideo = false
    var haveAudio = false
    for stream in input.streams {
      let parameters = stream.pointee.codecpar!
      let index = stream.pointee.index
      guard let timeBase = TimeBase(numerator: stream.pointee.time_base.num, denominator: stream.pointee.time_base.den)
      else { continue }
      switch parameters.pointee.codec_id {
      case AV_CODEC_ID_H264 where !haveVideo, AV_CODEC_ID_HEVC where !haveVideo:
        haveVideo = true
        let codec: Codec = parameters.pointee.codec_id == AV_CODEC_ID_HEVC ? .h265 : .h264
        let needsAnnexB = parameters.pointee.extradata_size > 0 && parameters.pointee.extradata[0] == 1
        tracks[index] = Track(
          id: TrackID(.video, channel: videoChannel),
          format: TrackFormat(
            codec: codec, width: Int(parameters.pointee.width), height: Int(parameters.pointee.height)),
          timeBase: timeBase,
          filter: needsAnnexB
            ? try BitstreamFilter(
              name: codec == .h265 ? "hevc_mp4toannexb" : "h264_mp4toannexb", parameters: parameters,
              timeBase: stream.pointee.time_base) : nil)
      case AV_CODEC_ID_AAC where !haveAudio, AV_CODEC_ID_PCM_ALAW where !haveAudio,
        AV_CODEC_ID_PCM_MULAW where !haveAudio:
        haveAudio = true
        let codec: Codec =
          parameters.pointee.codec_id == AV_CODEC_ID_AAC
          ? .aac : parameters.pointee.codec_id == AV_CODEC_ID_PCM_ALAW ? .g711a : .g711u
        tracks[index] = Track(
          id: TrackID(.audio, channel: audioChannel),
          format: TrackFormat(
            codec: codec, sampleRate: Int(parameters.pointee.sample_rate),
            channels: Int(parameters.pointee.ch_layout.nb_channels)),
          timeBase: timeBase, filter: nil)
      default:
        continue
      }
    }
    guard !tracks.isEmpty else { throw TiError.gap(.trackUnavailable, "\(path) has no H.264/H.265/AAC/G.711 stream") }
  }

  /// Reads the next packet of a selected stream.
  public func produce(context: NodeContext<EncodedPacket>) throws -> ProduceResult {
    guard let input, let packet else { return .finished }
    while true {
      let status = av_read_frame(input.pointer, packet.pointer)
      if status == FFmpeg.endOfFile { return .finished }
      try FFmpeg.check(status, "reading \(path)", code: .recordingUnreadable)
      defer { av_packet_unref(packet.pointer) }
      let streamIndex = packet.pointer.pointee.stream_index
      guard var track = tracks[streamIndex] else { continue }
      try track.filter?.filter(packet.pointer)
      let p = packet.pointer.pointee
      var data = Data(bytes: p.data, count: Int(p.size))
      let pts = p.pts == cff_nopts_value() ? p.dts : p.pts
      let first = anchor(input)
      // Before the file's start: encoder priming that an edit list hides from players. Skip it.
      if track.id.kind == .audio, try offset(pts, track) < first { continue }
      func micros(_ value: Int64) throws -> MediaTime {
        do { return try startTime + (try offset(value, track) - first) } catch {
          throw TiError.gap(.mediaUnreadable, "\(path): a timestamp of \(value) ticks is out of range: \(error)")
        }
      }
      let isKeyframe = p.flags & AV_PKT_FLAG_KEY != 0
      if track.id.kind == .video && isKeyframe {
        let sets = VideoParameterProbe.parameterSets(in: data, codec: track.format.codec)
        if !sets.isEmpty { track.format.parameterSets = sets }
      }
      if track.format.codec == .aac, let adts = ADTSHeader(data), adts.frameLength == data.count {
        // MPEG-TS carries AAC in ADTS already.
        track.format.audioSpecificConfig = adts.audioSpecificConfig
      } else if track.format.codec == .aac {
        guard
          let header = ADTSHeader.make(
            sampleRate: track.format.sampleRate, channels: track.format.channels, payloadLength: data.count)
        else {
          throw TiError.gap(.unsupportedMedia, "AAC at \(track.format.sampleRate) Hz cannot be framed in ADTS")
        }
        track.format.audioSpecificConfig = ADTSHeader(header)?.audioSpecificConfig ?? Data()
        data = header + data
      }
      if !track.announced {
        track.announced = true
        context.send(.formatChange(FormatChange(track: track.id, format: track.format, time: try micros(pts))))
      }
      tracks[streamIndex] = track
      context.emit(
        EncodedPacket(
          track: track.id, format: track.format, time: try micros(pts),
          decodeTime: p.dts == cff_nopts_value() ? nil : try micros(p.dts),
          duration: try offset(max(0, p.duration), track),
          isKeyframe: track.id.kind == .audio || isKeyframe, data: data))
      return .produced
    }
  }

  /// The file's time that maps to `startTime`: the earliest start of the selected streams. Packets
  /// before it are encoder priming that the container's edit list hides (MP4 AAC at pts −1024).
  private func anchor(_ input: InputFormatContext) -> MediaDuration {
    if let firstTimestamp { return firstTimestamp }
    var starts: [MediaDuration] = []
    for stream in input.streams where stream.pointee.start_time != cff_nopts_value() {
      guard let track = tracks[stream.pointee.index],
        let start = try? MediaDuration(ticks: stream.pointee.start_time, timeBase: track.timeBase)
      else { continue }
      starts.append(start)
    }
    let anchor = starts.min() ?? .zero
    firstTimestamp = anchor
    return anchor
  }

  /// `ticks` of the track's time base as a duration from the file's time 0.
  private func offset(_ ticks: Int64, _ track: Track) throws -> MediaDuration {
    do { return try MediaDuration(ticks: ticks, timeBase: track.timeBase) } catch {
      throw TiError.gap(.mediaUnreadable, "\(path): a timestamp of \(ticks) ticks is out of range")
    }
  }

  /// Seeks back to the start of the file.
  public func flush(context: NodeContext<EncodedPacket>) {
    guard let input else { return }
    av_seek_frame(input.pointer, -1, 0, AVSEEK_FLAG_BACKWARD)
    for key in tracks.keys { tracks[key]?.announced = false }
  }
}
