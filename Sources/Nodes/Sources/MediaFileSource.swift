import Foundation
import PipelineGraph
import Synchronization

/// Reads a standard media file (MP4, MOV, MKV, MPEG-TS, raw H.264/H.265/AAC… anything libavformat
/// opens) as a recording: H.264/H.265 video (converted to Annex B with in-band parameter sets) and AAC
/// (framed in ADTS) or G.711 audio, as ``EncodedPacket``s in the file's order (decode order: with
/// B-frames, presentation times go back and forth, decode times only forward).
///
/// The first video stream becomes track (video, `videoChannel`), the first audio stream
/// (audio, `audioChannel`); other streams and codecs are skipped. Each track's format is announced by a
/// `formatChange` event before its first packet.
///
/// Times: ``init(path:videoChannel:audioChannel:)`` keeps the file's own timeline (a packet at 1.5 s of
/// the file is at `MediaTime(microseconds: 1_500_000)`; ``MediaFileInfo/start`` is where it begins);
/// ``init(path:startTime:videoChannel:audioChannel:)`` places the file's start at a UTC instant, as a
/// camera's recording. Audio before the file's start (the AAC encoder's priming, which an edit list
/// hides from players) is skipped.
///
/// Durations: a packet lasts until the next packet of its track in decode order (one packet of
/// look-ahead per track), so containers without per-packet durations (MPEG-TS) give continuous tracks;
/// audio keeps the container's exact frame duration where it has one; the last packet lasts as the
/// container says, or as the one before it.
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
    /// The packet read last, waiting for the next one to give its duration.
    var pending: (packet: EncodedPacket, containerDuration: MediaDuration)?
    var lastDuration: MediaDuration
    /// Video: a keyframe was emitted since the file was opened or sought.
    var keyframeSeen = false
    /// Video: where the pictures before the first keyframe start (a file cut inside a group of pictures).
    var undecodableFrom: MediaTime?
  }

  /// The longest a packet is taken to last (10 s): a longer step is a hole in the file, not a frame.
  static let maximumDuration = MediaDuration.microseconds(10_000_000)

  /// The node's name.
  public let name = "MediaFileSource"
  /// The file.
  public let path: String
  private let startTime: MediaTime?
  private let videoChannel: UInt8
  private let audioChannel: UInt8
  private var reader: MediaFileReader?
  /// Why the file could not be opened again after a flush (thrown by the next read).
  private var reopenFailure: (any Error)?
  /// Ends the reading where it is, from any thread (the source itself is confined to its executor).
  public let stop = Stop()
  /// The packets skipped as damaged.
  public let damaged = DamagedPackets()
  /// The file has sound in a codec the source does not read (MP3, Opus, AC-3, PCM…): said once, at the
  /// first read, as an `unsupportedMedia` fact of the audio track over the file, so that what waits for
  /// sound reports why there is none.
  private var unreadSound: String?
  /// Whether that fact is still to be stated (again after a seek: what follows a flush forgets facts).
  private var unreadSoundPending = false
  private var tracks: [Int32: Track] = [:]
  /// Where the media read ends (the latest end of a packet sent): past it the file holds nothing, which
  /// the end of the file states as a `noRecording` fact of every track (a range that runs past the
  /// file's end has a gap there, with its reason), once per pass over the file.
  private var mediaEnd: MediaTime?
  private var endStated = false
  /// A transport stream cut off (``MediaFileReader/isCutShort``): its last pictures, held back in decode
  /// order. The cut tore the last one (it is left out) and lost the pictures decoded after it, which are
  /// shown among those before: at the end, only those shown before the first hole leave.
  private var tail: [EncodedPacket] = []
  /// The presentation times of the last pictures sent before the tail (the tail's holes are judged among
  /// them: a picture shown between two of the tail's may have left already).
  private var sentBeforeTail: [MediaTime] = []
  private static let tailLength = 16
  /// The file's time that maps to `startTime`.
  private var anchor = MediaDuration.zero

  /// Reads `path`, placing its start (``MediaFileInfo/start``) at `startTime`.
  public init(path: String, startTime: MediaTime, videoChannel: UInt8 = 0, audioChannel: UInt8 = 1) {
    self.path = path
    self.startTime = startTime
    self.videoChannel = videoChannel
    self.audioChannel = audioChannel
  }

  /// Reads `path` on its own timeline: a packet's time is its time in the file.
  public init(path: String, videoChannel: UInt8 = 0, audioChannel: UInt8 = 1) {
    self.path = path
    startTime = nil
    self.videoChannel = videoChannel
    self.audioChannel = audioChannel
  }

  /// The video track the source emits (when the file has a supported video stream).
  public var videoTrack: TrackID { TrackID(.video, channel: videoChannel) }
  /// The audio track the source emits, if the file has a supported audio stream.
  public var audioTrack: TrackID { TrackID(.audio, channel: audioChannel) }

  /// Describes the file at `path`: its start, duration, tracks and keyframes (reads the whole file's
  /// packet headers, not its media).
  /// - Throws: ``MediaError`` `notFound`/`mediaUnreadable` when it cannot be read, `trackUnavailable` when
  ///   it has no supported stream.
  public static func probe(path: String) throws -> MediaFileInfo {
    try MediaFileInfo(reading: MediaFileReader(path: path))
  }

  /// What a file says before its packets are gone through (its headers, and its last stretch for its
  /// end): its container and the format of the video stream the source reads (its codec, size and display
  /// matrix).
  public struct Headers: Sendable {
    /// libavformat's name of the container (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, `h264`…).
    public let container: String
    /// The video stream's format; nil when the file has none.
    public let video: TrackFormat?
    /// How long the file lasts: from its start to the end of its last packets (read from near its end),
    /// or as its headers say when it cannot seek (nil when they do not, or only guess from the bit rate).
    /// ``probe(path:)`` measures it from all the packets.
    public let duration: MediaDuration?
    /// The file's first stream of each kind the source reads none of (a sound in MP3 or Opus, a picture
    /// in VP9): its kind and libavcodec's name of its codec.
    public let unread: [(kind: TrackKind, codecName: String)]
  }

  /// Opens `path` as the source would and closes it again, without going through all its packets
  /// (libavformat reads the headers and, to probe the streams, a few packets; the end is measured from
  /// the last stretch): a missing file, one that is not media or one without a supported track throws
  /// what ``start(context:)`` would.
  /// - Throws: ``MediaError`` as ``start(context:)`` does.
  @discardableResult
  public static func check(path: String) throws -> Headers {
    let reader = try MediaFileReader(path: path)
    let read: Set<TrackKind> = Set(
      [reader.video.map { _ in .video }, reader.audio.map { _ in .audio }].compactMap { $0 })
    let unread = [TrackKind.video, .audio].filter { !read.contains($0) }.compactMap { kind in
      reader.described.first { $0.kind == kind }.map { (kind: kind, codecName: $0.codecName) }
    }
    // (Times from a file: an end and a start that cannot be subtracted say nothing.)
    let measured = reader.measuredEnd().flatMap { end -> Int64? in
      let (length, overflow) = end.subtractingReportingOverflow(reader.start.microseconds)
      return overflow || length <= 0 ? nil : length
    }
    return Headers(
      container: reader.containerName, video: reader.video?.format,
      duration: (measured ?? reader.headerDuration).map { .microseconds($0) }, unread: unread)
  }

  /// The packets a source skipped as damaged (bad bytes where a packet's structure is: it can be neither
  /// copied as a frame nor decoded), read from any thread; what follows them is read as ffmpeg reads it.
  public final class DamagedPackets: Sendable {
    private let counted = Atomic(0)

    /// How many so far.
    public var count: Int { counted.load(ordering: .relaxed) }

    func add() { counted.add(1, ordering: .relaxed) }
  }

  /// Ends a source's reading where it is, from any thread: what was read goes on (each track's last packet
  /// included), then the end of stream, as at the file's end. A recording stopped by a signal keeps what
  /// was read, each track as far as the file's order took it, instead of losing what waited in the edges.
  public final class Stop: Sendable {
    private let asked = Atomic(false)

    /// Asks the source to end its reading.
    public func callAsFunction() { asked.store(true, ordering: .relaxed) }

    var isAsked: Bool { asked.load(ordering: .relaxed) }
  }

  /// Opens the file and picks its streams.
  public func start(context: NodeContext<EncodedPacket>) throws {
    let reader = try MediaFileReader(path: path)
    reader.onDamagedPacket = { [damaged] in damaged.add() }
    self.reader = reader
    tracks.removeAll()
    if let video = reader.video {
      let frame = video.framesPerSecond.map { MediaDuration.microseconds(Int64(1_000_000 / max($0, 1))) }
      tracks[video.index] = Track(
        id: TrackID(.video, channel: videoChannel), format: video.format, timeBase: video.timeBase,
        lastDuration: frame ?? .microseconds(40_000))
    }
    if let audio = reader.audio {
      tracks[audio.index] = Track(
        id: TrackID(.audio, channel: audioChannel), format: audio.format, timeBase: audio.timeBase,
        lastDuration: .microseconds(20_000))
    }
    anchor = reader.start
    unreadSound = reader.audio == nil ? reader.described.first { $0.kind == .audio }?.codecName : nil
    unreadSoundPending = unreadSound != nil
  }

  /// Reads packets until one is ready to leave (its successor gave its duration), or the file ends.
  public func produce(context: NodeContext<EncodedPacket>) throws -> ProduceResult {
    if let reopenFailure {
      self.reopenFailure = nil
      throw reopenFailure
    }
    guard let reader else { return .finished }
    if unreadSoundPending {
      unreadSoundPending = false
      // From the file's start (the recording time it is placed at) on.
      let start = startTime ?? MediaTime(microseconds: anchor.microseconds)
      context.send(
        .gap(
          RecordingGap(
            range: MediaRange(start: start, end: MediaTime(microseconds: .max)), tracks: [audioTrack],
            reasons: [.unsupportedMedia])))
    }
    while !stop.isAsked, let raw = try reader.read() {
      guard var track = tracks[raw.stream] else { continue }
      // Before the file's start: encoder priming that an edit list hides from players. Skip it — not a
      // frame that ends after the start (a file cut without re-encoding, or 2112 samples of priming):
      // players play its end, and it keeps the sound in step (its `hiddenSamples` tell a decoder where
      // that end begins; a copy keeps the whole frame, as ffmpeg's does).
      // (A time out of range is thrown as such below.)
      if track.id.kind == .audio, (try? Self.endsBefore(anchor, raw.pts, raw.duration, track.timeBase)) == true {
        continue
      }
      var data = raw.data
      if track.id.kind == .video && raw.isKeyframe {
        let sets = VideoParameterProbe.parameterSets(in: data, codec: track.format.codec)
        if !sets.isEmpty { track.format.parameterSets = sets }
      }
      if track.format.codec == .aac, let adts = ADTSHeader(data), adts.frameLength == data.count {
        // MPEG-TS and raw AAC carry it in ADTS already.
        track.format.audioSpecificConfig = adts.audioSpecificConfig
      } else if track.format.codec == .aac {
        guard
          let header = ADTSHeader.make(
            sampleRate: track.format.sampleRate, channels: track.format.channels, payloadLength: data.count)
        else {
          throw MediaError.gap(.unsupportedMedia, "AAC at \(track.format.sampleRate) Hz cannot be framed in ADTS")
        }
        track.format.audioSpecificConfig = ADTSHeader(header)?.audioSpecificConfig ?? Data()
        data = header + data
      }
      let packet = EncodedPacket(
        track: track.id, format: track.format, time: try mediaTime(raw.pts, track),
        decodeTime: try mediaTime(raw.dts, track), duration: .zero,
        isKeyframe: track.id.kind == .audio || raw.isKeyframe, data: data, isHidden: raw.isHidden,
        hiddenSamples: raw.hiddenSamples)
      let containerDuration = try offset(raw.duration, track)
      let previous = track.pending
      track.pending = (packet, containerDuration)
      if let previous {
        let step = (try? packet.decodeTime - previous.packet.decodeTime) ?? .zero
        let duration: MediaDuration
        if track.id.kind == .audio && previous.containerDuration > .zero {
          duration = Self.audioDuration(previous.containerDuration, track)
        } else if step > .zero && step <= Self.maximumDuration {
          duration = step
        } else {
          duration = previous.containerDuration > .zero ? previous.containerDuration : track.lastDuration
        }
        track.lastDuration = duration
        emit(previous.packet.withDuration(duration), &track, context)
        tracks[raw.stream] = track
        return .produced
      }
      tracks[raw.stream] = track
    }
    // The end: the last packet of each track, earliest first.
    let last = tracks.compactMap { key, track in track.pending.map { (key, $0) } }
      .sorted { $0.1.packet.decodeTime < $1.1.packet.decodeTime }
    guard !last.isEmpty else {
      if !tail.isEmpty, let key = tracks.first(where: { $0.value.id.kind == .video })?.key, var track = tracks[key] {
        for packet in Self.shownWithoutHole(tail, after: sentBeforeTail) { send(packet, &track, context) }
        tail = []
        sentBeforeTail = []
        tracks[key] = track
      }
      if !endStated, let mediaEnd {
        endStated = true
        context.send(
          .gap(
            RecordingGap(
              range: MediaRange(start: mediaEnd, end: MediaTime(microseconds: .max)), tracks: [],
              reasons: [.noRecording])))
      }
      return .finished
    }
    for (key, pending) in last {
      guard var track = tracks[key] else { continue }
      track.pending = nil
      // The last picture of a transport stream cut off was torn by the cut: it is left out (past what is
      // sent, the end of the file's media is stated as such).
      if track.id.kind == .video, reader.isCutShort {
        tracks[key] = track
        continue
      }
      let duration =
        pending.containerDuration > .zero ? Self.audioDuration(pending.containerDuration, track) : track.lastDuration
      emit(pending.packet.withDuration(duration), &track, context)
      tracks[key] = track
    }
    return .produced
  }

  /// What a sound frame lasts: the container's duration, but never more than an AAC frame holds (1024
  /// samples). An MP4 stores a hole in its sound as one sample lasting over it (its `stts`); taken as
  /// given, the hole would pass for sound and no gap would be reported.
  private static func audioDuration(_ container: MediaDuration, _ track: Track) -> MediaDuration {
    guard track.format.codec == .aac, track.format.sampleRate > 0 else { return container }
    return min(container, .microseconds(1024 * 1_000_000 / Int64(track.format.sampleRate)))
  }

  private func emit(_ packet: EncodedPacket, _ track: inout Track, _ context: NodeContext<EncodedPacket>) {
    guard track.id.kind == .video, reader?.isCutShort == true else { return send(packet, &track, context) }
    tail.append(packet)
    guard tail.count > Self.tailLength else { return }
    let leaving = tail.removeFirst()
    sentBeforeTail.append(leaving.time)
    if sentBeforeTail.count > Self.tailLength { sentBeforeTail.removeFirst() }
    send(leaving, &track, context)
  }

  /// The pictures of `tail` shown before the first hole in the presentation times of the pictures sent
  /// (`sent`) and held (a step of more than one and a half frames), in decode order.
  private static func shownWithoutHole(_ tail: [EncodedPacket], after sent: [MediaTime]) -> [EncodedPacket] {
    let times = (sent + tail.map(\.time)).sorted()
    let steps = zip(times, times.dropFirst()).compactMap { (try? $1 - $0)?.microseconds }.filter { $0 > 0 }
    guard let frame = steps.min() else { return tail }
    let lastSent = sent.max() ?? MediaTime(microseconds: .min)
    for (earlier, later) in zip(times, times.dropFirst()) where later > lastSent {
      if let step = try? later - earlier, step.microseconds * 2 > frame * 3 {
        return tail.filter { $0.time < later }
      }
    }
    return tail
  }

  private func send(_ packet: EncodedPacket, _ track: inout Track, _ context: NodeContext<EncodedPacket>) {
    let end = packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
    mediaEnd = max(mediaEnd ?? end, end)
    if !track.announced {
      track.announced = true
      context.send(.formatChange(FormatChange(track: track.id, format: packet.format, time: packet.time)))
    }
    if track.id.kind == .video && !track.keyframeSeen {
      if packet.isKeyframe {
        // Pictures before the first keyframe cannot be decoded: why the stretch they span is missing.
        track.keyframeSeen = true
        if let from = track.undecodableFrom, from < packet.time {
          context.send(
            .gap(
              RecordingGap(
                range: MediaRange(start: from, end: packet.time), tracks: [track.id], reasons: [.noKeyFrame])))
        }
        track.undecodableFrom = nil
      } else {
        track.undecodableFrom = min(track.undecodableFrom ?? packet.time, packet.time)
      }
    }
    context.emit(packet)
  }

  /// True when a sound packet at `pts` lasting `duration` (ticks of `timeBase`; 0: unknown) ends at or
  /// before `start` (one of unknown length: starts before it).
  static func endsBefore(_ start: MediaDuration, _ pts: Int64, _ duration: Int64, _ timeBase: TimeBase) throws -> Bool {
    let (end, overflow) = pts.addingReportingOverflow(max(0, duration))
    guard !overflow else { return false }
    let time = try MediaDuration(ticks: duration > 0 ? end : pts, timeBase: timeBase)
    return duration > 0 ? time <= start : time < start
  }

  /// `ticks` of the track's time base as a duration from the file's time 0.
  private func offset(_ ticks: Int64, _ track: Track) throws -> MediaDuration {
    do { return try MediaDuration(ticks: ticks, timeBase: track.timeBase) } catch {
      throw MediaError.gap(.mediaUnreadable, "\(path): a timestamp of \(ticks) ticks is out of range")
    }
  }

  /// The recording time of `ticks` of the track's time base.
  private func mediaTime(_ ticks: Int64, _ track: Track) throws -> MediaTime {
    do {
      let fileTime = try offset(ticks, track)
      guard let startTime else { return MediaTime(microseconds: fileTime.microseconds) }
      return try startTime + (try fileTime - anchor)
    } catch {
      throw MediaError.gap(.mediaUnreadable, "\(path): a timestamp of \(ticks) ticks is out of range: \(error)")
    }
  }

  /// Seeks to the keyframe at or before the flush's seek target (`NodeContext.seekTarget`), or back to
  /// the start of the file without one (or when the file cannot seek there).
  public func flush(context: NodeContext<EncodedPacket>) {
    let target = context.seekTarget.flatMap { target -> Int64? in
      guard let startTime else { return target.microseconds }
      guard let offset = try? target - startTime, let fileTime = try? anchor + offset else { return nil }
      return fileTime.microseconds
    }
    if let reader, let target, reader.seek(toMicroseconds: target) {
      // Positioned: what follows is read from the keyframe there.
    } else if let reader, !reader.rewind() {
      // A stream libavformat cannot seek in: read it again from the start, or fail at the next read.
      do {
        let reader = try MediaFileReader(path: path)
        reader.onDamagedPacket = { [damaged] in damaged.add() }
        self.reader = reader
      } catch {
        self.reader = nil
        reopenFailure = error
      }
    }
    unreadSoundPending = unreadSound != nil
    endStated = false
    tail = []
    sentBeforeTail = []
    for key in tracks.keys {
      tracks[key]?.announced = false
      tracks[key]?.pending = nil
      tracks[key]?.keyframeSeen = false
      tracks[key]?.undecodableFrom = nil
    }
  }
}
