internal import CFFmpeg
import Foundation
import PipelineGraph

/// Reads the first H.264/H.265 video stream and the first AAC/G.711 audio stream of a standard media
/// file with libavformat, video converted to Annex B. Owns its format context, packet and bitstream
/// filters.
///
/// Every packet leaves with a decode and a presentation timestamp: raw elementary streams (`.h264`,
/// `.aac`) carry none, so they are counted from 0 in decode order by the packets' durations; a raw video
/// stream with B-frames is shown in the order its decoder returns the pictures (``PresentationOrder``).
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
    /// The container's frame rate (video), when it states one.
    let framesPerSecond: Double?
    /// How many frames the codec says are reordered at most (B-frames; 0 without).
    let reorderDepth: Int

    /// True when the codec says frames are reordered (B-frames).
    var reorders: Bool { reorderDepth > 0 }
  }

  /// One audio or video stream of the file, selected or not (for ``MediaFileInfo``).
  struct Described {
    let index: Int32
    let kind: TrackKind
    let codecName: String
    /// As the container declares them (what ``MediaFileInfo`` says of a stream the source does not read).
    let width: Int
    let height: Int
    let sampleRate: Int
    let channels: Int
  }

  /// One packet read.
  struct RawPacket {
    let stream: Int32
    let data: Data
    /// Presentation timestamp, in the stream's time base.
    let pts: Int64
    /// Decode timestamp, in the stream's time base.
    let dts: Int64
    /// The container's duration (0 when it gives none).
    let duration: Int64
    let isKeyframe: Bool
    /// Decoded for what follows, never shown (an edit list hides it: `AV_PKT_FLAG_DISCARD`).
    var isHidden = false
    /// Audio: the samples at its start that are not shown (an edit list starts inside it).
    var hiddenSamples = 0
  }

  let path: String
  /// The video stream, if the file has a supported one.
  private(set) var video: Stream?
  /// The audio stream, if the file has a supported one.
  private(set) var audio: Stream?
  /// Every audio and video stream, in the file's order.
  private(set) var described: [Described] = []
  /// The container's name (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, `h264`…).
  let containerName: String
  /// How long the file lasts by its headers (or, for a transport stream, the timestamps at its two
  /// ends), in microseconds; nil when they do not say, or only guess it from the bit rate.
  let headerDuration: Int64?
  /// An MPEG transport stream that ends inside one of its packets (no multiple of 188, 192 or 204 bytes):
  /// a recording cut off. Its last picture was being written when it was cut; a transport stream does
  /// not say how long a picture is, so libavformat hands it over torn.
  let isCutShort: Bool
  private let input: InputFormatContext
  private let packet: Packet
  private var filters: [Int32: BitstreamFilter] = [:]
  /// Where the next untimed packet of a stream is decoded (raw elementary streams).
  private var untimedNext: [Int32: Int64] = [:]
  /// A raw video stream with B-frames: the decoder that orders it, made at its first packet.
  private var order: PresentationOrder?
  /// Its packets read and decoded, waiting for their rank, oldest first, with their serials.
  private var ordering: [(serial: Int64, packet: Read)] = []
  /// The serial of the next packet of that stream, and whether the file ended.
  private var (nextSerial, orderingEnded): (Int64, Bool) = (0, false)
  /// Packets of that stream given out with a rank, and the decode time given last.
  private var ranked: Int64 = 0
  private var lastOrderedDts: Int64?

  /// Opens `path` and picks its streams.
  /// - Throws: ``MediaError`` `notFound`/`mediaUnreadable` when it cannot be opened, `trackUnavailable`
  ///   when it has no supported stream.
  init(path: String) throws {
    self.path = path
    // A FIFO or a device would block or never end: only regular files (or links to them) are read.
    var status = stat()
    guard stat(path, &status) == 0 else {
      throw MediaError.gap(.notFound, "cannot open \(path): \(String(cString: strerror(errno)))")
    }
    guard status.st_mode & S_IFMT == S_IFREG else {
      throw MediaError.gap(.mediaUnreadable, "\(path) is not a regular file")
    }
    input = try InputFormatContext(path: path)
    packet = try Packet()
    containerName = input.pointer.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
    let duration = input.pointer.pointee.duration
    headerDuration =
      duration > 0 && duration != cff_nopts_value()
        && input.pointer.pointee.duration_estimation_method != AVFMT_DURATION_FROM_BITRATE ? duration : nil
    let size = Int64(status.st_size)
    isCutShort = containerName == "mpegts" && [188, 192, 204].allSatisfy { size % $0 != 0 }
    for stream in input.streams {
      let parameters = stream.pointee.codecpar!
      let index = stream.pointee.index
      let type = parameters.pointee.codec_type
      if type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO {
        let name = avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
        described.append(
          Described(
            index: index, kind: type == AVMEDIA_TYPE_VIDEO ? .video : .audio, codecName: name,
            width: Int(parameters.pointee.width), height: Int(parameters.pointee.height),
            sampleRate: Int(parameters.pointee.sample_rate), channels: Int(parameters.pointee.ch_layout.nb_channels)))
      }
      guard let timeBase = TimeBase(numerator: stream.pointee.time_base.num, denominator: stream.pointee.time_base.den)
      else { continue }
      let start = stream.pointee.start_time == cff_nopts_value() ? nil : stream.pointee.start_time
      switch parameters.pointee.codec_id {
      case AV_CODEC_ID_H264 where video == nil, AV_CODEC_ID_HEVC where video == nil:
        let codec: Codec = parameters.pointee.codec_id == AV_CODEC_ID_HEVC ? .h265 : .h264
        if parameters.pointee.extradata_size > 0 && parameters.pointee.extradata[0] == 1 {
          filters[index] = try BitstreamFilter(
            name: codec == .h265 ? "hevc_mp4toannexb" : "h264_mp4toannexb", parameters: parameters,
            timeBase: stream.pointee.time_base)
        }
        let rate = stream.pointee.avg_frame_rate.num > 0 ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
        video = Stream(
          index: index,
          format: TrackFormat(
            codec: codec, width: Int(parameters.pointee.width), height: Int(parameters.pointee.height),
            displayMatrix: Self.displayMatrix(of: stream)),
          timeBase: timeBase, startTicks: start,
          framesPerSecond: rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : nil,
          reorderDepth: Int(max(0, parameters.pointee.video_delay)))
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
          timeBase: timeBase, startTicks: start, framesPerSecond: nil, reorderDepth: 0)
      default:
        continue
      }
    }
    guard video != nil || audio != nil else {
      // What it has instead, so that the line says why (probe too: it describes what it can read).
      let found =
        described.isEmpty
        ? "no audio or video stream" : "its streams: \(described.map(\.codecName).joined(separator: ", "))"
      throw MediaError.gap(.trackUnavailable, "\(path) has no H.264/H.265/AAC/G.711 stream (\(found))")
    }
  }

  /// The stream's display matrix (a rotated picture), as its nine values; empty when it has none or the
  /// identity.
  private static func displayMatrix(of stream: UnsafeMutablePointer<AVStream>) -> [Int32] {
    guard let sides = stream.pointee.side_data else { return [] }
    for side in UnsafeBufferPointer(start: sides, count: Int(max(0, stream.pointee.nb_side_data)))
    where side.type == AV_PKT_DATA_DISPLAYMATRIX && side.size >= 36 {
      guard let data = side.data else { continue }
      let matrix = (0..<9).map {
        data.advanced(by: $0 * 4).withMemoryRebound(to: Int32.self, capacity: 1) { $0.pointee }
      }
      return matrix == [0x1_0000, 0, 0, 0, 0x1_0000, 0, 0, 0, 0x4000_0000] ? [] : matrix
    }
    return []
  }

  /// Packets read ahead (while decode times are being recovered), oldest first.
  private var readAhead: [RawPacket] = []
  /// Called for each packet skipped as damaged (its payload could not be converted to Annex B).
  var onDamagedPacket: (() -> Void)?
  /// Audio samples libavformat says are not shown (`AV_PKT_DATA_SKIP_SAMPLES`, given once for the stretch
  /// an edit list hides) that the packets read since have not covered yet.
  private var audioSamplesToHide: Int64 = 0

  /// The next packet of a selected stream, or nil at the end of the file.
  ///
  /// Matroska stores presentation times only: libavformat derives decode times from them once it has
  /// seen as many frames as the stream reorders, so the first frames come without one. They are read
  /// ahead to the first frame that has one and given the decode times before it, a frame apart.
  /// - Parameter payload: false skips the payload (and its conversion to Annex B): for scanning.
  /// - Throws: ``MediaError`` `unreadableMedia` when reading fails.
  func read(payload: Bool = true) throws -> RawPacket? {
    if order != nil { return try readInOrder(payload: payload) }
    if !readAhead.isEmpty { return readAhead.removeFirst() }
    guard let first = try readPacket(payload: payload) else { return nil }
    if first.untimed, first.stream == video?.index, let video, video.reorders {
      order = try PresentationOrder(codec: video.format.codec)
      ordering = [(0, first)]
      nextSerial = 1
      try order?.decode(first.data, serial: 0)
      return try readInOrder(payload: payload)
    }
    guard first.dts == nil, first.stream == video?.index else { return first.timed }
    // Read up to the first video frame with a decode time (a few frames: the reordering depth).
    var waiting = [first]
    var known: Read?
    while waiting.count < 256, let next = try readPacket(payload: payload) {
      waiting.append(next)
      if next.stream == first.stream, next.dts != nil {
        known = next
        break
      }
    }
    let untimed = waiting.indices.filter { waiting[$0].stream == first.stream && waiting[$0].dts == nil }
    let frame = max(1, first.duration)
    // Without any decode time (a short file): the presentation times in order, shifted back so that no
    // frame is decoded after it is shown (strictly increasing, as the muxer needs).
    let sorted = untimed.map { waiting[$0].pts }.sorted()
    let shift = untimed.enumerated().map { sorted[$0.offset] &- waiting[$0.element].pts }.max() ?? 0
    for (position, index) in untimed.enumerated() {
      if let knownDts = known?.dts {
        waiting[index].dts = knownDts &- Int64(untimed.count - position) &* frame
      } else {
        waiting[index].dts = sorted[position] &- max(0, shift)
      }
    }
    readAhead = waiting.dropFirst().map(\.timed)
    return waiting[0].timed
  }

  /// A packet as libavformat gives it: a decode time only when it has one.
  private struct Read {
    var stream: Int32
    var data: Data
    var pts: Int64
    var dts: Int64?
    var duration: Int64
    var isKeyframe: Bool
    /// True for a packet of a raw stream (no timestamps at all).
    var untimed = false
    var isHidden = false
    var hiddenSamples = 0

    var timed: RawPacket {
      RawPacket(
        stream: stream, data: data, pts: pts, dts: dts ?? pts, duration: duration, isKeyframe: isKeyframe,
        isHidden: isHidden, hiddenSamples: hiddenSamples)
    }
  }

  private func readPacket(payload: Bool) throws -> Read? {
    while true {
      let status = av_read_frame(input.pointer, packet.pointer)
      if status == FFmpeg.endOfFile { return nil }
      try FFmpeg.check(status, "reading \(path)", kind: .unreadableMedia)
      defer { av_packet_unref(packet.pointer) }
      let stream = packet.pointer.pointee.stream_index
      guard stream == video?.index || stream == audio?.index else { continue }
      // A sound frame read short (a file cut off inside it: libavformat marks it corrupt) would be copied
      // as an AAC frame no decoder can finish; it is left out (a picture read short still decodes in part).
      if stream == audio?.index && packet.pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { continue }
      if payload {
        do { try filters[stream]?.filter(packet.pointer) } catch  where FFmpeg.failed(error, with: FFmpeg.invalidData) {
          // Bad bytes where the packet's NAL unit lengths are (a damaged file): it cannot be made Annex B,
          // nor decoded. Skipped, as ffmpeg skips what it cannot decode, and counted: the rest is read.
          filters[stream]?.reset()
          onDamagedPacket?()
          continue
        }
      }
      let p = packet.pointer.pointee
      let none = cff_nopts_value()
      let duration = max(0, p.duration)
      var dts: Int64? = p.dts == none ? nil : p.dts
      var pts = p.pts
      if dts == nil && pts == none {
        // A raw elementary stream: times follow the packets in decode order, which is the order they are
        // shown in only without B-frames (their order is in the bitstream's picture counts, which only
        // decoding recovers: `readInOrder`, which needs the payload).
        if stream == video?.index && video?.reorders == true {
          // Annex B already (a raw stream has no bitstream filter): the payload as read.
          return Read(
            stream: stream, data: Data(bytes: p.data, count: Int(p.size)), pts: 0, dts: nil,
            duration: max(0, p.duration), isKeyframe: p.flags & AV_PKT_FLAG_KEY != 0, untimed: true)
        }
        let next = untimedNext[stream] ?? 0
        (dts, pts) = (next, next)
        untimedNext[stream] = next.addingReportingOverflow(duration).partialValue
      } else if pts == none {
        pts = dts ?? 0
      } else if dts == nil && (stream != video?.index || video?.reorders != true) {
        dts = pts
      }
      let isHidden = p.flags & AV_PKT_FLAG_DISCARD != 0
      return Read(
        stream: stream, data: payload ? Data(bytes: p.data, count: Int(p.size)) : Data(), pts: pts, dts: dts,
        duration: duration, isKeyframe: p.flags & AV_PKT_FLAG_KEY != 0, isHidden: isHidden,
        hiddenSamples: stream == audio?.index ? hiddenSamples(ofPacketLasting: duration, hidden: isHidden) : 0)
    }
  }

  /// The samples at the start of the audio packet just read (`packet`, lasting `duration` ticks) that are
  /// not shown. libavformat says how many samples an edit list hides once, on the first packet of the
  /// stretch (a file cut without re-encoding: hundreds of packets flagged to discard, then one the cut
  /// falls inside): they are counted off packet by packet, and what is left at a shown packet is its
  /// hidden start — the decoder drops it, as ffmpeg does.
  private func hiddenSamples(ofPacketLasting duration: Int64, hidden: Bool) -> Int {
    var size = 0
    if let side = av_packet_get_side_data(packet.pointer, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 4 {
      audioSamplesToHide = (0..<4).reduce(Int64(0)) { $0 | Int64(side[$1]) << (8 * $1) }
    }
    // (A rate a hostile header gives as 0 or less counts nothing.)
    guard audioSamplesToHide > 0, let audio, duration > 0, audio.format.sampleRate > 0 else { return 0 }
    // The packet's samples: its duration in its time base, at the stream's rate.
    let rate = Int64(audio.format.sampleRate)
    let (scaled, overflow) = duration.multipliedReportingOverflow(by: rate * Int64(audio.timeBase.numerator))
    guard !overflow else { return 0 }
    let samples = max(0, scaled / Int64(audio.timeBase.denominator))
    let hiddenHere = min(audioSamplesToHide, samples)
    audioSamplesToHide -= hiddenHere
    return hidden ? 0 : Int(hiddenHere)
  }

  /// The next packet of a raw video stream with B-frames, timed by its decoder's order: shown at
  /// rank × its duration, decoded at (serial − the stream's reorder depth) × its duration, so that no
  /// picture is decoded after it is shown (the first ones are decoded before 0, as in an MP4 with
  /// B-frames). A picture the decoder dropped (its references are missing), or one that would be shown
  /// before it is decoded in a stream deeper than it declares, is shown when it is decoded.
  private func readInOrder(payload: Bool) throws -> RawPacket? {
    guard let order, let video else { return nil }
    while true {
      if let head = ordering.first {
        let rank = order.takeRank(of: head.serial)
        if rank != nil || orderingEnded || nextSerial - head.serial > PresentationOrder.horizon {
          ordering.removeFirst()
          let frame = max(1, head.packet.duration)
          let depth = Int64(video.reorderDepth)
          // Decode times count the pictures that got a rank (ranks count only those: a dropped picture
          // would otherwise put every later one a frame behind its rank); a dropped one takes a tick.
          let (scheduled, overflow) = (ranked - depth).multipliedReportingOverflow(by: frame)
          let (shown, overflowShown) = (rank ?? 0).multipliedReportingOverflow(by: frame)
          let (following, overflowNext) = (lastOrderedDts ?? scheduled &- 1).addingReportingOverflow(1)
          guard !overflow, !overflowShown, !overflowNext else {
            throw MediaError.gap(.mediaUnreadable, "\(path): a frame duration of \(frame) ticks is out of range")
          }
          let (dts, pts): (Int64, Int64)
          if rank != nil {
            dts = max(following, scheduled)
            pts = max(dts, shown)
            ranked += 1
          } else {
            (dts, pts) = (following, following)
          }
          lastOrderedDts = dts
          return RawPacket(
            stream: head.packet.stream, data: payload ? head.packet.data : Data(), pts: pts, dts: dts,
            duration: head.packet.duration, isKeyframe: head.packet.isKeyframe)
        }
      } else if orderingEnded {
        return nil
      }
      if let next = try readPacket(payload: true) {
        try order.decode(next.data, serial: nextSerial)
        ordering.append((nextSerial, next))
        nextSerial += 1
      } else {
        order.finish()
        orderingEnded = true
      }
    }
  }

  /// The file's start: the earliest first timestamp of the selected streams (0 when the container
  /// gives none). Packets before it are encoder priming that an edit list hides (MP4 AAC at pts −1024).
  var start: MediaDuration {
    let starts = [video, audio].compactMap { stream in
      stream.flatMap { stream in stream.startTicks.flatMap { try? MediaDuration(ticks: $0, timeBase: stream.timeBase) }
      }
    }
    return starts.min() ?? .zero
  }

  /// Goes to the keyframe at or before `microseconds` of the file's time; false when the file cannot
  /// seek there (a raw stream, whose times are counted from its start, or one libavformat cannot seek
  /// in): the reader is then where it was or at a place the caller rewinds from.
  ///
  /// libavformat lands on a keyframe where the container has an index (MP4, Matroska's cues); elsewhere
  /// (MPEG-TS) it may land on any packet. The first video keyframe after the landing point is looked
  /// for: at or before the target, reading goes on from there (with the audio read on the way);
  /// otherwise the seek goes further back (2, 10, 60 s) before giving up.
  func seek(toMicroseconds target: Int64) -> Bool {
    guard order == nil, !["h264", "hevc"].contains(containerName) else { return false }
    for back: Int64 in [0, 2_000_000, 10_000_000, 60_000_000] {
      let at = target.subtractingReportingOverflow(back).partialValue
      guard reposition(to: at) else { return false }
      guard let video else { return true }
      // Up to the first video keyframe: the pictures before it refer to what was not read (dropped),
      // the audio stays.
      var read: [RawPacket] = []
      var looked = 0
      while looked < 4096, let packet = try? self.read() {
        looked += 1
        guard packet.stream == video.index else {
          read.append(packet)
          continue
        }
        guard packet.isKeyframe else { continue }
        let time = (try? MediaDuration(ticks: packet.pts, timeBase: video.timeBase))?.microseconds ?? .max
        guard time <= target else { break }
        readAhead = read + [packet] + readAhead
        return true
      }
    }
    return false
  }

  /// Where the file's media ends (microseconds of its time), from its last packets: the reader goes to
  /// the last stretch its headers point at and reads to the end (a picture without a duration lasts one
  /// frame). The headers alone are not exact: Matroska and MOV count their duration from their time 0,
  /// not from their start; FLV's metadata ends at its last picture's start. Nil when the file cannot seek
  /// (a raw stream), its headers give no duration, or it has no packet there; the reader is left at the end.
  func measuredEnd() -> Int64? {
    // Without a duration in its headers the end is not near any point known: not read through.
    guard order == nil, !["h264", "hevc"].contains(containerName), let headerDuration else { return nil }
    let claimed = start.microseconds.addingReportingOverflow(headerDuration).partialValue
    let at = max(start.microseconds, claimed.subtractingReportingOverflow(10_000_000).partialValue)
    guard reposition(to: at) else { return nil }
    var end: Int64?
    var looked = 0
    while looked < 100_000, let packet = try? read(payload: false) {
      looked += 1
      guard !packet.isHidden,
        let stream = [video, audio].compactMap({ $0 }).first(where: { $0.index == packet.stream })
      else { continue }
      let frame = stream.framesPerSecond.map { Int64(1_000_000 / max($0, 1)) } ?? 0
      guard let time = try? MediaDuration(ticks: packet.pts, timeBase: stream.timeBase).microseconds,
        let length = try? MediaDuration(ticks: packet.duration, timeBase: stream.timeBase).microseconds
      else { continue }
      let (last, overflow) = time.addingReportingOverflow(length > 0 ? length : frame)
      guard !overflow else { continue }
      end = max(end ?? last, last)
    }
    return end
  }

  /// Seeks libavformat to `microseconds` (a keyframe at or before it where it can) and forgets what was
  /// read ahead and the times counted for packets without one: they belonged to the place left. False
  /// when libavformat cannot seek there.
  private func reposition(to microseconds: Int64) -> Bool {
    guard avformat_seek_file(input.pointer, -1, .min, microseconds, microseconds, 0) >= 0 else { return false }
    untimedNext.removeAll()
    readAhead.removeAll()
    audioSamplesToHide = 0
    return true
  }

  /// Seeks back to the file's start; false when libavformat cannot (the reader is then where it was,
  /// and the caller opens the file again).
  func rewind() -> Bool {
    guard av_seek_frame(input.pointer, -1, 0, AVSEEK_FLAG_BACKWARD) >= 0 else { return false }
    untimedNext.removeAll()
    readAhead.removeAll()
    audioSamplesToHide = 0
    order?.reset()
    (ordering, nextSerial, orderingEnded, ranked, lastOrderedDts) = ([], 0, false, 0, nil)
    return true
  }
}
