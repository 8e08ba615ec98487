import Foundation
import PipelineGraph

/// What a standard media file holds, as ``MediaFileSource/probe(path:)`` finds it: where it starts and
/// ends, its audio and video streams, and its keyframes, on the file's own timeline (the times a
/// ``MediaFileSource`` made with ``MediaFileSource/init(path:videoChannel:audioChannel:)`` gives its
/// packets).
public struct MediaFileInfo: Sendable, Equatable {
  /// One audio or video stream of the file.
  public struct Track: Sendable, Equatable {
    /// The container's stream index.
    public var index: Int
    /// Video or audio.
    public var kind: TrackKind
    /// libavcodec's name of the codec (`h264`, `hevc`, `aac`, `opus`…).
    public var codecName: String
    /// The codec as tipipe carries it, or nil when the stream is not read (another codec, or not the
    /// first stream of its kind).
    public var codec: Codec?
    /// Picture width (video).
    public var width: Int
    /// Picture height (video).
    public var height: Int
    /// How the picture is turned or mirrored to be shown upright (video: the container's display
    /// matrix, ``TrackFormat/turn``); nil when shown as stored, for audio and for streams not read.
    public var turn: PictureTurn?
    /// The container's frame rate (video), when it states one.
    public var framesPerSecond: Double?
    /// True when frames are shown in another order than they are decoded (B-frames).
    public var hasBFrames: Bool
    /// Sample rate (audio).
    public var sampleRate: Int
    /// Channels (audio).
    public var channels: Int
    /// Packets of the stream (frames), for the streams that are read; 0 for the others.
    public var packets: Int
    /// From its first frame shown (a sound frame the file's start cuts into: its first sample after the
    /// cut) to the end of its last, for the streams that are read (empty for the others). An export that follows the
    /// video covers the file when it asks for the video's range.
    public var range: MediaRange
  }

  /// The file.
  public var path: String
  /// libavformat's name of the container (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, `matroska,webm`, `h264`…).
  public var container: String
  /// The first instant of media (the earliest first timestamp of the streams read).
  public var start: MediaTime
  /// The end of the last frame or audio frame.
  public var end: MediaTime
  /// The audio and video streams, in the file's order.
  public var tracks: [Track]
  /// The presentation times of the video keyframes, in order.
  public var keyframes: [MediaTime]
  /// The file hides pictures it holds (an edit list: a file cut without re-encoding keeps the start of the
  /// group of pictures its cut is in, for their references).
  public var hidesPictures = false

  /// `end − start`.
  public var duration: MediaDuration { (try? end - start) ?? .zero }
  /// The video stream that is read, if any.
  public var video: Track? { tracks.first { $0.kind == .video && $0.codec != nil } }
  /// The audio stream that is read, if any.
  public var audio: Track? { tracks.first { $0.kind == .audio && $0.codec != nil } }

  /// The last keyframe at or before `time` (the first keyframe when there is none before).
  public func keyframe(atOrBefore time: MediaTime) -> MediaTime? {
    keyframes.last { $0 <= time } ?? keyframes.first
  }

  /// Whether a keyframe cut at `time` would copy pictures the file hides: `time` lies in a group of
  /// pictures whose keyframe the file's edit list hides (a file cut without re-encoding begins inside a
  /// group), or the file shows no keyframe at all. False for a file without video or that hides none
  /// (a recording that begins inside a group, without an edit list: what precedes its first keyframe
  /// cannot be decoded, and is not shown either).
  public func keyframeCutShowsHiddenPictures(at time: MediaTime) -> Bool {
    guard let video, hidesPictures else { return false }
    guard let first = keyframes.first else { return true }
    return video.range.start < first && time < first
  }

  init(reading reader: MediaFileReader) throws {
    path = reader.path
    container = reader.containerName
    let start = reader.start
    self.start = MediaTime(microseconds: start.microseconds)
    var end = self.start
    var keyframes: [MediaTime] = []
    var counts: [Int32: Int] = [:]
    var latest: [Int32: MediaTime] = [:]
    var spans: [Int32: MediaRange] = [:]
    var reordered = false
    var hidesPictures = false
    let selected = [reader.video, reader.audio].compactMap { $0 }
    while let raw = try reader.read(payload: false) {
      guard let stream = selected.first(where: { $0.index == raw.stream }) else { continue }
      let time: MediaTime
      let duration: MediaDuration
      do {
        time = MediaTime(microseconds: try MediaDuration(ticks: raw.pts, timeBase: stream.timeBase).microseconds)
        duration = try MediaDuration(ticks: raw.duration, timeBase: stream.timeBase)
      } catch {
        throw MediaError.gap(.mediaUnreadable, "\(reader.path): a timestamp of \(raw.pts) ticks is out of range")
      }
      // Sound before the file's start (priming an edit list hides), as the source skips it.
      if stream.format.codec.kind == .audio,
        (try? MediaFileSource.endsBefore(start, raw.pts, raw.duration, stream.timeBase)) == true
      {
        continue
      }
      // What an edit list hides (a file cut without re-encoding) is not shown: not a frame of the file, nor
      // a keyframe an export can start at, nor the file's end, and the track's range starts after it.
      if !raw.isHidden { counts[raw.stream, default: 0] += 1 }
      let frameEnd = time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
      if !raw.isHidden { end = max(end, frameEnd) }
      // A sound frame the file's start cuts into is shown from its first sample after the cut.
      let rate = Int64(stream.format.sampleRate)
      let shown =
        raw.hiddenSamples > 0 && rate > 0
        ? time.advanced(by: .microseconds(Int64(raw.hiddenSamples) * 1_000_000 / rate), notAfter: frameEnd) : time
      if !raw.isHidden, let span = spans[raw.stream] {
        spans[raw.stream] = MediaRange(start: min(span.start, shown), end: max(span.end, frameEnd))
      } else if !raw.isHidden {
        spans[raw.stream] = MediaRange(start: shown, end: frameEnd)
      }
      if stream.format.codec.kind == .video {
        if let previous = latest[raw.stream], time < previous { reordered = true }
        latest[raw.stream] = max(latest[raw.stream] ?? time, time)
        if raw.isKeyframe && !raw.isHidden { keyframes.append(time) }
        if raw.isHidden { hidesPictures = true }
      }
    }
    if let video = reader.video, let last = latest[video.index], end <= last {
      // No durations in the container: the last frame lasts one frame.
      let frame = video.framesPerSecond.map { Int64(1_000_000 / max($0, 1)) } ?? 40_000
      end = last.advanced(by: .microseconds(frame), notAfter: MediaTime(microseconds: .max))
      if let span = spans[video.index] { spans[video.index] = MediaRange(start: span.start, end: max(span.end, end)) }
    }
    self.end = end
    self.keyframes = keyframes.sorted()
    self.hidesPictures = hidesPictures
    let fileStart = self.start
    tracks = reader.described.map { described in
      let stream = [reader.video, reader.audio].compactMap { $0 }.first { $0.index == described.index }
      let format = stream?.format
      return Track(
        index: Int(described.index), kind: described.kind, codecName: described.codecName, codec: format?.codec,
        width: format?.width ?? described.width, height: format?.height ?? described.height,
        turn: format?.turn, framesPerSecond: stream?.framesPerSecond,
        hasBFrames: described.kind == .video && stream != nil && (reordered || stream?.reorders == true),
        // A stream the source does not read (MP3, Opus, PCM sound) is still described as the file has it.
        sampleRate: format?.sampleRate ?? described.sampleRate, channels: format?.channels ?? described.channels,
        packets: counts[described.index] ?? 0,
        range: spans[described.index] ?? MediaRange(start: fileStart, end: fileStart))
    }
  }
}
