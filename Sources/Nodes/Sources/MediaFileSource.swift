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
/// - Note: reading runs on the node's executor; for local files it is page-cache speed.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush rewinds to the file's start.
public final class MediaFileSource: SourceNode {
  /// Emits packets.
  public typealias Output = EncodedPacket

  private struct Track {
    var id: TrackID
    var format: TrackFormat
    var timeBase: TimeBase
    var announced = false
  }

  /// The node's name.
  public let name = "MediaFileSource"
  private let path: String
  private let startTime: MediaTime
  private let videoChannel: UInt8
  private let audioChannel: UInt8
  private var reader: MediaFileReader?
  private var tracks: [Int32: Track] = [:]
  /// The file's time that maps to `startTime`.
  private var anchor = MediaDuration.zero

  /// Reads `path`, placing its first frame at `startTime`.
  public init(path: String, startTime: MediaTime, videoChannel: UInt8 = 0, audioChannel: UInt8 = 1) {
    self.path = path
    self.startTime = startTime
    self.videoChannel = videoChannel
    self.audioChannel = audioChannel
  }

  /// Opens the file and picks its streams.
  public func start(context: NodeContext<EncodedPacket>) throws {
    let reader = try MediaFileReader(path: path)
    self.reader = reader
    if let video = reader.video {
      tracks[video.index] = Track(
        id: TrackID(.video, channel: videoChannel), format: video.format, timeBase: video.timeBase)
    }
    if let audio = reader.audio {
      tracks[audio.index] = Track(
        id: TrackID(.audio, channel: audioChannel), format: audio.format, timeBase: audio.timeBase)
    }
    // The earliest start of the selected streams is the recording's start: packets before it are encoder
    // priming that the container's edit list hides (MP4 AAC at pts −1024).
    let starts = [reader.video, reader.audio].compactMap { stream in
      stream.flatMap { stream in stream.startTicks.flatMap { try? MediaDuration(ticks: $0, timeBase: stream.timeBase) }
      }
    }
    anchor = starts.min() ?? .zero
  }

  /// Reads the next packet of a selected stream.
  public func produce(context: NodeContext<EncodedPacket>) throws -> ProduceResult {
    guard let reader else { return .finished }
    while let raw = try reader.read() {
      guard var track = tracks[raw.stream] else { continue }
      // Before the file's start: encoder priming that an edit list hides from players. Skip it.
      if track.id.kind == .audio, try offset(raw.pts, track) < anchor { continue }
      var data = raw.data
      if track.id.kind == .video && raw.isKeyframe {
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
      let time = try mediaTime(raw.pts, track)
      if !track.announced {
        track.announced = true
        context.send(.formatChange(FormatChange(track: track.id, format: track.format, time: time)))
      }
      tracks[raw.stream] = track
      context.emit(
        EncodedPacket(
          track: track.id, format: track.format, time: time, decodeTime: try raw.dts.map { try mediaTime($0, track) },
          duration: try offset(raw.duration, track), isKeyframe: track.id.kind == .audio || raw.isKeyframe, data: data))
      return .produced
    }
    return .finished
  }

  /// `ticks` of the track's time base as a duration from the file's time 0.
  private func offset(_ ticks: Int64, _ track: Track) throws -> MediaDuration {
    do { return try MediaDuration(ticks: ticks, timeBase: track.timeBase) } catch {
      throw TiError.gap(.mediaUnreadable, "\(path): a timestamp of \(ticks) ticks is out of range")
    }
  }

  /// The recording time of `ticks` of the track's time base.
  private func mediaTime(_ ticks: Int64, _ track: Track) throws -> MediaTime {
    do { return try startTime + (try offset(ticks, track) - anchor) } catch {
      throw TiError.gap(.mediaUnreadable, "\(path): a timestamp of \(ticks) ticks is out of range: \(error)")
    }
  }

  /// Seeks back to the start of the file.
  public func flush(context: NodeContext<EncodedPacket>) {
    reader?.rewind()
    for key in tracks.keys { tracks[key]?.announced = false }
  }
}
