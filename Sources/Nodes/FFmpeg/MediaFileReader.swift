internal import CFFmpeg
import Foundation
import PipelineGraph

/// Reads the first H.264/H.265 video stream and the first AAC/G.711 audio stream of a standard media
/// file with libavformat, video converted to Annex B. Owns its format context, packet and bitstream
/// filters.
final class MediaFileReader {
  /// A selected stream.
  struct Stream {
    /// libavformat's stream index.
    let index: Int32
    /// Its format (codec, size or rate and channels).
    let format: TrackFormat
    /// Its time base.
    let timeBase: TimeBase
    /// Its first timestamp, in its time base, when the container gives one.
    let startTicks: Int64?
  }

  /// One packet read.
  struct RawPacket {
    let stream: Int32
    let data: Data
    /// Presentation (or, without one, decode) timestamp, in the stream's time base.
    let pts: Int64
    /// Decode timestamp, when there is one.
    let dts: Int64?
    let duration: Int64
    let isKeyframe: Bool
  }

  let path: String
  /// The video stream, if the file has a supported one.
  private(set) var video: Stream?
  /// The audio stream, if the file has a supported one.
  private(set) var audio: Stream?
  private let input: InputFormatContext
  private let packet: Packet
  private var filters: [Int32: BitstreamFilter] = [:]

  /// Opens `path` and picks its streams.
  /// - Throws: ``TiError`` `notFound`/`mediaUnreadable` when it cannot be opened, `trackUnavailable`
  ///   when it has no supported stream.
  init(path: String) throws {
    self.path = path
    input = try InputFormatContext(path: path)
    packet = try Packet()
    for stream in input.streams {
      let parameters = stream.pointee.codecpar!
      guard let timeBase = TimeBase(numerator: stream.pointee.time_base.num, denominator: stream.pointee.time_base.den)
      else { continue }
      let index = stream.pointee.index
      let start = stream.pointee.start_time == cff_nopts_value() ? nil : stream.pointee.start_time
      switch parameters.pointee.codec_id {
      case AV_CODEC_ID_H264 where video == nil, AV_CODEC_ID_HEVC where video == nil:
        let codec: Codec = parameters.pointee.codec_id == AV_CODEC_ID_HEVC ? .h265 : .h264
        if parameters.pointee.extradata_size > 0 && parameters.pointee.extradata[0] == 1 {
          filters[index] = try BitstreamFilter(
            name: codec == .h265 ? "hevc_mp4toannexb" : "h264_mp4toannexb", parameters: parameters,
            timeBase: stream.pointee.time_base)
        }
        video = Stream(
          index: index,
          format: TrackFormat(
            codec: codec, width: Int(parameters.pointee.width), height: Int(parameters.pointee.height)),
          timeBase: timeBase, startTicks: start)
      case AV_CODEC_ID_AAC where audio == nil, AV_CODEC_ID_PCM_ALAW where audio == nil,
        AV_CODEC_ID_PCM_MULAW where audio == nil:
        let codec: Codec =
          parameters.pointee.codec_id == AV_CODEC_ID_AAC
          ? .aac : parameters.pointee.codec_id == AV_CODEC_ID_PCM_ALAW ? .g711a : .g711u
        audio = Stream(
          index: index,
          format: TrackFormat(
            codec: codec, sampleRate: Int(parameters.pointee.sample_rate),
            channels: Int(parameters.pointee.ch_layout.nb_channels)),
          timeBase: timeBase, startTicks: start)
      default:
        continue
      }
    }
    guard video != nil || audio != nil else {
      throw TiError.gap(.trackUnavailable, "\(path) has no H.264/H.265/AAC/G.711 stream")
    }
  }

  /// The next packet of a selected stream, or nil at the end of the file.
  /// - Throws: ``TiError`` `recordingUnreadable` when reading fails.
  func read() throws -> RawPacket? {
    while true {
      let status = av_read_frame(input.pointer, packet.pointer)
      if status == FFmpeg.endOfFile { return nil }
      try FFmpeg.check(status, "reading \(path)", code: .recordingUnreadable)
      defer { av_packet_unref(packet.pointer) }
      let stream = packet.pointer.pointee.stream_index
      guard stream == video?.index || stream == audio?.index else { continue }
      try filters[stream]?.filter(packet.pointer)
      let p = packet.pointer.pointee
      return RawPacket(
        stream: stream, data: Data(bytes: p.data, count: Int(p.size)), pts: p.pts == cff_nopts_value() ? p.dts : p.pts,
        dts: p.dts == cff_nopts_value() ? nil : p.dts, duration: max(0, p.duration),
        isKeyframe: p.flags & AV_PKT_FLAG_KEY != 0)
    }
  }

  /// Goes back to the start of the file.
  func rewind() {
    av_seek_frame(input.pointer, -1, 0, AVSEEK_FLAG_BACKWARD)
  }
}
