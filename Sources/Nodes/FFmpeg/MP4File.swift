internal import CFFmpeg
import Foundation
import PipelineGraph

/// An MP4 being written (stream copy): H.264 (`avc1`) or H.265 (`hvc1`) video and AAC audio, Annex B
/// and ADTS in, ISO BMFF out.
///
/// The file's header (`ftyp` and an empty `moov` with the codecs' configuration) is ``MP4Header``'s for
/// H.264 and AAC (libavformat's bytes but its `udta`: H.264 loads no FFmpeg library), libavformat's for
/// H.265 and what ``MP4Header`` leaves to it; room for the
/// final index follows as a `free` box; then the media is appended as fragments by
/// ``MP4FragmentWriter`` (a `moof`+`mdat` about every second — every 8 seconds or 4 MB for an export,
/// which is kept only when complete — written from the packets' own buffers), so a crash keeps
/// everything up to the last fragment. ``finalize(to:)`` turns it into an ordinary MP4
/// with its index at the front, in place (``MP4Finalizer``): the media is written once. When the index
/// outgrows the reserved room, it falls back to a stream-copy remux with `faststart`.
final class MP4File {
  private var fragments: MP4FragmentWriter?
  /// Each track's index in ``fragments`` and time base (as the muxer chose it).
  private let videoTrack: (index: Int, base: TimeBase)?
  private var audioTrack: (index: Int, base: TimeBase)?
  let path: String
  /// Audio that plays before the file's start: the AAC encoder's priming frame, or a frame that
  /// began before the first video frame. It is written at the start of the audio track and hidden by an
  /// edit list, so that a decoder has it (no fade-in) and the track's first presented sample is at 0.
  /// Set before the first audio frame; later audio times are shifted by it.
  var audioLeadIn = MediaDuration.zero
  /// Where the video's presentation ends, when frames after it were written as references of B-frames
  /// before it: the finished file's video edit list ends there. (The remux fallback cannot keep it: such a
  /// file then shows those frames at its end.)
  var videoPresentationEnd: MediaDuration?
  /// How long after the file's start the audio begins (its first frame starts after the first video
  /// frame). The fragmented file cannot say it (each track starts at 0 once the `moov` is written); the
  /// finished file's audio edit list begins with an empty edit that long.
  var audioStart = MediaDuration.zero

  /// True when the file has a sound track (made with one, or given one by ``addAudio(_:)``).
  var hasAudio: Bool { audioTrack != nil }

  /// Gives a file made without sound an AAC track of `audio`, for a sound that begins after the file was
  /// made: the `moov` declares it in place (``MP4Finalizer/addTrack(_:trex:toFileAt:)``, in the room
  /// reserved for the index), and the fragments from now on carry it. False, changing nothing, when the
  /// file has sound already, `audio` is not AAC, or the room left is too small.
  func addAudio(_ audio: TrackFormat) throws -> Bool {
    guard audioTrack == nil, let fragments,
      let base = TimeBase(numerator: 1, denominator: Int32(clamping: audio.sampleRate))
    else { return false }
    let id = UInt32(videoTrack == nil ? 1 : 2)
    guard let (trak, trex) = MP4Header.lateAudio(audio, id: id) else { return false }
    do {
      guard try MP4Finalizer.addTrack(trak, trex: trex, toFileAt: path) else { return false }
    } catch let error as MP4Error {
      throw MediaError(.writeFailed, "\(path): cannot declare the sound's track: \(error)")
    }
    let index = fragments.addTrack(
      MP4FragmentWriter.Track(id: id, timescale: Int64(base.denominator), lengthPrefixed: false))
    audioTrack = (index, base)
    return true
  }

  /// Creates `path` (fragmented MP4) with a video stream of `video` and an AAC stream of `audio` (at
  /// least one), reserving `reservedIndexBytes` after the `moov` for the final index (see ``indexBytes(forSeconds:samplesPerSecond:)``).
  init(
    path: String, video: TrackFormat?, audio: TrackFormat?, reservedIndexBytes: Int = 1 << 20,
    use: MP4FragmentWriter.Use = .recording
  ) throws {
    guard video != nil || audio != nil else { throw MediaError(.invalidArgument, "an MP4 needs a track") }
    if let audio, audio.codec != .aac {
      throw MediaError(.unsupportedFormat, "MP4 carries AAC; \(audio.codec) must be transcoded first")
    }
    self.path = path
    let bases: [TimeBase]
    if let header = MP4Header.make(video: video, audio: audio) {
      try Self.create(path, with: header)
      let rates = [video.map { _ in MP4Header.videoTimescale }, audio?.sampleRate].compactMap { $0 }
      bases = try rates.map { rate in
        guard let base = TimeBase(numerator: 1, denominator: Int32(clamping: rate)) else {
          throw MediaError(.writeFailed, "\(path): no time base of \(rate) Hz")
        }
        return base
      }
    } else {
      bases = try Self.writeHeaderWithLibavformat(path: path, video: video, audio: audio)
    }
    videoTrack = video == nil ? nil : (0, bases[0])
    audioTrack = audio == nil ? nil : (bases.count - 1, bases[bases.count - 1])
    var tracks: [MP4FragmentWriter.Track] = []
    if let video, let base = videoTrack?.base {
      // As the muxer did: Annex B parameter sets mean Annex B samples (an `avcC`/`hvcC` one would not).
      let sets = video.parameterSets
      let annexB =
        video.codec == .h265
        ? sets.count > 6 && (sets.starts(with: [0, 0, 1]) || sets.starts(with: [0, 0, 0, 1]))
        : !sets.isEmpty && sets.first != 1
      tracks.append(MP4FragmentWriter.Track(id: 1, timescale: Int64(base.denominator), lengthPrefixed: annexB))
    }
    if let base = audioTrack?.base {
      tracks.append(
        MP4FragmentWriter.Track(id: UInt32(tracks.count + 1), timescale: Int64(base.denominator), lengthPrefixed: false)
      )
    }
    let fragments = try MP4FragmentWriter(path: path, tracks: tracks, use: use)
    // A `free` box right after the (empty) `moov`: the room the final index is written into.
    try fragments.reserve(min(max(8, reservedIndexBytes), Self.maximumReservedIndexBytes))
    self.fragments = fragments
  }

  /// Creates `path` holding `header` (what libavformat's `avio_open` and header would have made).
  private static func create(_ path: String, with header: Data) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0o666)
    guard descriptor >= 0 else {
      let failure = LibraryFailure.posix(errno)
      throw MediaError(.writeFailed, "cannot create \(path): \(failure.text)", cause: failure)
    }
    defer { Glibc.close(descriptor) }
    var done = 0
    while done < header.count {
      let written = header[(header.startIndex + done)...].withUnsafeBytes {
        Glibc.write(descriptor, $0.baseAddress, $0.count)
      }
      if written < 0, errno == EINTR { continue }
      guard written > 0 else {
        let failure = LibraryFailure.posix(written < 0 ? errno : EIO)
        throw MediaError(.writeFailed, "cannot write \(path): \(failure.text)", cause: failure)
      }
      done += written
    }
  }

  /// Creates `path` with the header libavformat writes for `video` and `audio` (H.265, or what
  /// ``MP4Header`` leaves to it) and returns the tracks' time bases, in that order.
  static func writeHeaderWithLibavformat(path: String, video: TrackFormat?, audio: TrackFormat?) throws -> [TimeBase] {
    var context: UnsafeMutablePointer<AVFormatContext>?
    try FFmpeg.check(
      avformat_alloc_output_context2(&context, nil, "mp4", path), "creating an MP4 muxer", kind: .writeFailed)
    guard let context else { throw MediaError(.writeFailed, "creating an MP4 muxer") }
    defer {
      avio_closep(&context.pointee.pb)
      avformat_free_context(context)
    }
    var streams: [UnsafeMutablePointer<AVStream>] = []
    if let video {
      guard let stream = avformat_new_stream(context, nil) else { throw MediaError(.resourceExhausted, "new stream") }
      let parameters = stream.pointee.codecpar!
      parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
      parameters.pointee.codec_id = video.codec == .h265 ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264
      if video.codec == .h265 { parameters.pointee.codec_tag = cff_mktag(0x68, 0x76, 0x63, 0x31) }  // hvc1
      parameters.pointee.width = Int32(video.width)
      parameters.pointee.height = Int32(video.height)
      try Self.setExtradata(parameters, video.parameterSets)
      stream.pointee.time_base = AVRational(num: 1, den: 1_000_000)
      streams.append(stream)
    }
    if let audio {
      guard let stream = avformat_new_stream(context, nil) else { throw MediaError(.resourceExhausted, "new stream") }
      let parameters = stream.pointee.codecpar!
      parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
      parameters.pointee.codec_id = AV_CODEC_ID_AAC
      parameters.pointee.sample_rate = Int32(audio.sampleRate)
      av_channel_layout_default(&parameters.pointee.ch_layout, Int32(audio.channels))
      parameters.pointee.frame_size = 1024
      try Self.setExtradata(parameters, audio.audioSpecificConfig)
      stream.pointee.time_base = AVRational(num: 1, den: Int32(audio.sampleRate))
      streams.append(stream)
    }
    guard avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE) >= 0 else {
      throw MediaError(.writeFailed, "cannot create \(path)")
    }
    var options: OpaquePointer?
    av_dict_set(&options, "movflags", "empty_moov+default_base_moof+negative_cts_offsets", 0)
    defer { av_dict_free(&options) }
    try FFmpeg.check(avformat_write_header(context, &options), "writing the MP4 header", kind: .writeFailed)
    // The muxer may have changed the streams' time bases; its track ids follow the streams (1, 2).
    return try streams.map { stream in
      guard let base = TimeBase(numerator: stream.pointee.time_base.num, denominator: stream.pointee.time_base.den)
      else { throw MediaError(.writeFailed, "\(path): the muxer chose no time base") }
      return base
    }
  }

  /// Room for the index of `seconds` of media with `samplesPerSecond` samples (video frames plus audio
  /// frames): at most 12 bytes a sample (size, composition offset, sync entry), 64 bytes a second for
  /// the chunk offsets of the fragments, plus 64 KB. Sized from the sample rate so that a long
  /// low-frame-rate export does not reserve more than its media; an index that outgrows its room is
  /// finalized by a remux instead.
  static let maximumReservedIndexBytes = 64 << 20

  static func indexBytes(forSeconds seconds: Int64, samplesPerSecond: Double = 110) -> Int {
    let perSecond = 64 + 12 * min(max(samplesPerSecond, 1), 500)
    // At most 64 MB: a larger index (days of high-rate media) is finalized by the remux.
    return min(65_536 + Int(Double(min(max(0, seconds), 1 << 32)) * perSecond), maximumReservedIndexBytes)
  }

  deinit { close() }

  private static func setExtradata(_ parameters: UnsafeMutablePointer<AVCodecParameters>, _ bytes: Data) throws {
    guard !bytes.isEmpty else { return }
    guard let buffer = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
      throw MediaError(.resourceExhausted, "allocating codec extradata")
    }
    bytes.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    parameters.pointee.extradata = buffer.assumingMemoryBound(to: UInt8.self)
    parameters.pointee.extradata_size = Int32(bytes.count)
  }

  /// Writes one video access unit (Annex B) at output time `time` (from the file's start), decoded
  /// at `decodeTime` (the same but for reordered frames: B-frames have `decodeTime > time`, a negative
  /// composition offset); `duration` is the time to the next frame in decode order.
  func writeVideo(
    _ data: Data, time: MediaDuration, decodeTime: MediaDuration? = nil, duration: MediaDuration, isKeyframe: Bool
  ) throws {
    guard let videoTrack else { return }
    try write(
      data, payload: nil, track: videoTrack.index, base: videoTrack.base, time: time, decodeTime: decodeTime ?? time,
      duration: duration, isKeyframe: isKeyframe)
  }

  /// Writes one AAC frame given in ADTS (the header is stripped) at output time `time`.
  func writeAudio(_ adts: Data, time: MediaDuration, duration: MediaDuration) throws {
    guard let audioTrack else { return }
    let headerLength = min(ADTSHeader(adts)?.headerLength ?? 0, adts.count)
    let shifted = try checked { try time + audioLeadIn }
    try write(
      adts, payload: headerLength..<adts.count, track: audioTrack.index, base: audioTrack.base, time: shifted,
      decodeTime: shifted, duration: duration, isKeyframe: true)
  }

  private func checked<Value>(_ body: () throws -> Value) throws -> Value { try writing(path, body) }

  private func write(
    _ data: Data, payload: Range<Int>?, track: Int, base: TimeBase, time: MediaDuration, decodeTime: MediaDuration,
    duration: MediaDuration, isKeyframe: Bool
  ) throws {
    guard let fragments else { throw MediaError(.writeFailed, "the MP4 is closed") }
    try fragments.append(
      track: track, data, payload: payload, time: try checked { try time.ticks(in: base) },
      decodeTime: try checked { try decodeTime.ticks(in: base) },
      duration: try checked { try duration.ticks(in: base) },
      isSync: isKeyframe)
  }

  /// Finishes the fragmented file and makes it an ordinary MP4 with the index at the front, moved to
  /// `destination`. (When the index does not fit the reserved room, the file is remuxed into
  /// `destination` instead; when it leaves most of a small file's room unused, the file is copied there
  /// without that room — in both cases the fragmented file is left for the caller to remove.)
  func finalize(to destination: String) throws {
    guard let fragments else { throw MediaError(.writeFailed, "the MP4 is closed") }
    try fragments.flush()
    close()
    do {
      // A small file whose index left most of its room unused is written to `destination` without it (the
      // fragmented file is left for the caller to remove); otherwise finished in place.
      if try MP4Finalizer.finalizeInPlace(
        path: path, tables: fragments.tables, fragmentHeaders: fragments.fragmentHeaders, audioLeadIn: audioLeadIn,
        audioStart: audioStart, videoEnd: videoPresentationEnd, compactingInto: destination)
      {
        return
      }
    } catch is MP4Error {
      try Self.remux(from: path, to: destination, audioLeadIn: try checked { try audioLeadIn - audioStart })
      return
    } catch {
      throw MediaError(.writeFailed, "finishing \(path): \(error.localizedDescription)")
    }
    guard rename(path, destination) == 0 else {
      throw MediaError(.writeFailed, "cannot rename \(path) to \(destination)")
    }
  }

  /// Finishes the file (``finalize(to:)``) under a temporary name beside `destination`, then renames it
  /// there by ``OutputFile/install(_:at:)``: the one way a finished MP4 reaches a path a user named.
  func finalize(installingAt destination: URL) throws {
    let staging = path + ".final.mp4"
    defer { unlink(staging) }
    try finalize(to: staging)
    try OutputFile.install(staging, at: destination)
  }

  /// Finishes the fragmented file as it is (its last fragment written), and closes it: the file stays a
  /// fragmented MP4.
  func finishFragmented() throws {
    guard let fragments else { throw MediaError(.writeFailed, "the MP4 is closed") }
    defer { close() }
    try fragments.flush()
  }

  /// Closes the file without finishing it (what was written up to the last fragment stays readable).
  func close() { fragments = nil }

  /// `audioLeadIn` moves the audio back (a lead-in) or, negative, forward (a late start): the muxer writes
  /// the edit list.
  private static func remux(from source: String, to destination: String, audioLeadIn: MediaDuration) throws {
    let input = try InputFormatContext(path: source)
    var output: UnsafeMutablePointer<AVFormatContext>?
    try FFmpeg.check(
      avformat_alloc_output_context2(&output, nil, "mp4", destination), "creating an MP4 muxer", kind: .writeFailed)
    guard let output else { throw MediaError(.writeFailed, "creating an MP4 muxer") }
    defer {
      avio_closep(&output.pointee.pb)
      avformat_free_context(output)
    }
    for stream in input.streams {
      guard let copy = avformat_new_stream(output, nil) else { throw MediaError(.resourceExhausted, "new stream") }
      try FFmpeg.check(avcodec_parameters_copy(copy.pointee.codecpar, stream.pointee.codecpar), "copying parameters")
      copy.pointee.time_base = stream.pointee.time_base
    }
    guard avio_open(&output.pointee.pb, destination, AVIO_FLAG_WRITE) >= 0 else {
      throw MediaError(.writeFailed, "cannot create \(destination)")
    }
    var options: OpaquePointer?
    av_dict_set(&options, "movflags", "faststart", 0)
    defer { av_dict_free(&options) }
    try FFmpeg.check(avformat_write_header(output, &options), "writing \(destination)", kind: .writeFailed)
    let packet = try Packet()
    while true {
      let status = av_read_frame(input.pointer, packet.pointer)
      if status == FFmpeg.endOfFile { break }
      try FFmpeg.check(status, "reading \(source)", kind: .writeFailed)
      let index = Int(packet.pointer.pointee.stream_index)
      let timeBase = input.streams[index].pointee.time_base
      if input.streams[index].pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO, audioLeadIn != .zero,
        let base = TimeBase(numerator: timeBase.num, denominator: timeBase.den),
        let lead = try? audioLeadIn.ticks(in: base)
      {
        // Back to its place before the start: the muxer writes the edit list that hides it.
        packet.pointer.pointee.pts -= lead
        packet.pointer.pointee.dts -= lead
      }
      av_packet_rescale_ts(
        packet.pointer, input.streams[index].pointee.time_base, output.pointee.streams[index]!.pointee.time_base)
      packet.pointer.pointee.pos = -1
      let written = av_interleaved_write_frame(output, packet.pointer)
      av_packet_unref(packet.pointer)
      try FFmpeg.check(written, "writing \(destination)", kind: .writeFailed)
    }
    try FFmpeg.check(av_write_trailer(output), "finishing \(destination)", kind: .writeFailed)
  }
}

/// `body`'s result; a time that does not fit (or any other error) is `writeFailed` for `path`.
func writing<Value>(_ path: String, _ body: () throws -> Value) throws -> Value {
  do { return try body() } catch { throw MediaError(.writeFailed, "\(path): \(error)") }
}
