import Foundation
import PipelineGraph

/// One MP4 recorded from packets: the one recording path that the export (``Exporter``) and the
/// recorder (``MP4Writer``) share.
///
/// Media is written in stretches: each maps a stretch of source time to the file's time where the
/// previous one ended, so an export cuts gaps out and a recorder keeps one stretch. Within a stretch:
/// - a video frame lasts until the next frame in decode order (one frame of look-ahead, the only one
///   on this path); a frame whose decode time does not follow the previous one's cannot be written and
///   is left out (``skippedVideoPackets``); nothing shown at or after ``limit`` is presented: a frame
///   shown after it but decoded before it (the reference of B-frames just before the limit) is written
///   and hidden by the video track's edit list, frames decoded at or after it are not written;
/// - audio is written once the video has reached its end, so it never runs past the video, and never
///   overlaps the frame before it (a frame up to 2 ms early, from millisecond record times, is moved
///   after it); audio that starts before the file's first video frame is its lead-in, hidden by an
///   edit list (``MP4File/audioLeadIn``); when a stretch ends, its audio may end at most 20 ms after
///   its video; the audio track is a run of whole frames, a hole in the sound filled with AAC silence
///   (each frame after one within half a frame of its time: players that run on the sound stay in step,
///   ``audioPlace(_:lasting:in:_:)``);
/// - only AAC in the file's audio format is written.
///
/// The file is written under a working name (``OutputFile/workingPath(for:)``); ``finalize(installingAt:)``
/// installs the finished MP4, ``abandon()`` removes what was written.
final class MP4Recording {
  private struct Stretch {
    var sourceStart: MediaTime
    var outputStart: MediaDuration
    var videoEnd: MediaTime
    var audioEnd: MediaTime?
  }

  /// The file's video format.
  let video: TrackFormat
  /// The file's audio format, if it has an audio track (from the start, or from ``addAudio(_:)``).
  private(set) var audio: TrackFormat?
  /// Nothing at or after this source time is written (the requested range's end).
  let limit: MediaTime
  /// Where the unfinished file is.
  let workingPath: String
  private var file: MP4File?
  private var stretch: Stretch?
  private var pendingVideo: EncodedPacket?
  private var pendingAudio: [EncodedPacket] = []
  private var lastDecodeTime: MediaDuration?
  /// ``addAudio(_:)`` was asked already.
  private var declinedAudio = false
  /// A frame at or after ``limit`` came: later frames in decode order may depend on it, so no more video.
  private(set) var videoEnded = false
  /// The end of the file's time: where the next stretch starts.
  private(set) var outputEnd = MediaDuration.zero
  /// Video frames written.
  private(set) var videoPackets = 0
  /// Audio frames written.
  private(set) var audioPackets = 0
  /// Frames shown at or after ``limit`` written as references of B-frames before it (hidden by an edit
  /// list: not part of the file's presentation).
  private(set) var hiddenVideoPackets = 0
  /// Video frames left out because their decode time did not follow the previous one's.
  private(set) var skippedVideoPackets = 0
  /// Frames of AAC silence written where the sound had a hole (``audioPlace(_:lasting:in:_:)``).
  private(set) var filledAudioPackets = 0
  /// Where the audio written so far ends, in the file's time.
  private var audioOutputEnd: MediaDuration?

  /// Audio kept waiting for video: a few seconds' worth.
  private static let maximumPendingAudio = 256

  /// Creates the working file with its tracks.
  init(
    workingPath: String, video: TrackFormat, audio: TrackFormat?, limit: MediaTime = MediaTime(microseconds: .max),
    reservedIndexBytes: Int, use: MP4FragmentWriter.Use = .recording
  ) throws {
    file = try MP4File(
      path: workingPath, video: video, audio: audio, reservedIndexBytes: reservedIndexBytes, use: use)
    self.workingPath = workingPath
    self.video = video
    self.audio = audio
    self.limit = limit
  }

  /// Gives a file made without sound the track of `format` (AAC), for a sound whose first packet came
  /// after the file was made (a camera's microphone that starts late, a gap before it): its frames are
  /// written from then on, the track beginning where its first frame is (an empty edit before it). The
  /// track is declared when its first frame is written (a sound none of whose frames is written leaves no
  /// empty track); if the header has no room left for it then, the sound is left out. False when the
  /// file has sound already, or had no room for it, or `format` is not AAC.
  func addAudio(_ format: TrackFormat) -> Bool {
    guard audio == nil, !declinedAudio, format.codec == .aac, file != nil else { return false }
    audio = format
    return true
  }

  /// Declares the sound's track before its first frame is written, when the file was made without one;
  /// false (the sound is left out from then on) when the header has no room for it.
  private func declareAudio(in file: MP4File, _ format: TrackFormat) throws -> Bool {
    guard !file.hasAudio else { return true }
    guard try file.addAudio(format) else {
      audio = nil
      declinedAudio = true
      pendingAudio.removeAll()
      return false
    }
    return true
  }

  /// True while a stretch is open.
  var isRecording: Bool { stretch != nil }

  /// The source range of the open stretch, as far as written.
  var openRange: MediaRange? { stretch.map { MediaRange(start: $0.sourceStart, end: $0.videoEnd) } }

  /// Opens a stretch at source time `time` (a keyframe's), placed where the file ends.
  func begin(at time: MediaTime) {
    precondition(stretch == nil, "a stretch is open")
    stretch = Stretch(sourceStart: time, outputStart: outputEnd, videoEnd: time)
  }

  /// Takes a video frame of the open stretch: it is written when the next one gives its duration.
  func writeVideo(_ packet: EncodedPacket) throws {
    guard stretch != nil, !videoEnded else { return }
    if let previous = pendingVideo {
      let step = try checked { try packet.decodeTime - previous.decodeTime }
      try emitVideo(previous, lasting: step > .zero ? step : previous.duration)
      pendingVideo = nil
    }
    // Every frame decoded at or after the limit is shown after it (a frame is never shown before it is
    // decoded); a frame shown after the limit but decoded before it is the reference of B-frames inside.
    if packet.decodeTime >= limit {
      videoEnded = true
      return try flushAudio(upTo: min(stretch?.videoEnd ?? limit, limit))
    }
    pendingVideo = packet
    try flushAudio(upTo: min(packet.time, limit))
  }

  /// Takes an audio frame: written once the video reaches its end.
  func writeAudio(_ packet: EncodedPacket) throws {
    guard audio != nil, packet.time < limit else { return }
    pendingAudio.append(packet)
    if let pendingVideo {
      try flushAudio(upTo: min(pendingVideo.time, limit))
    } else if videoEnded, let stretch {
      try flushAudio(upTo: min(stretch.videoEnd, limit))
    }
    if pendingAudio.count > Self.maximumPendingAudio {
      pendingAudio.removeFirst(pendingAudio.count - Self.maximumPendingAudio)
    }
  }

  /// Closes the open stretch: its last frame lasts until `end` at most (never less than the video
  /// already written); audio up to 20 ms past the video's end is written. Waiting audio from
  /// `keepAudioFrom` on stays for the next stretch. Returns the source range written.
  @discardableResult
  func end(at end: MediaTime, keepAudioFrom: MediaTime? = nil) throws -> MediaRange? {
    if let pending = pendingVideo, pending.time >= limit {
      try emitVideo(pending, lasting: pending.duration)
      pendingVideo = nil
    } else if let pending = pendingVideo {
      let end = max(end, stretch?.videoEnd ?? end)
      let stop = pending.time.advanced(by: pending.duration, notAfter: min(end, limit))
      try flushAudio(upTo: stop, closing: true)
      try emitVideo(pending, lasting: try checked { try stop - pending.time })
      pendingVideo = nil
    }
    guard let open = stretch else { return nil }
    try flushAudio(upTo: open.videoEnd, closing: true)
    pendingAudio.removeAll { packet in keepAudioFrom.map { packet.time < $0 } ?? true }
    stretch = nil
    videoEnded = false
    guard open.videoEnd > open.sourceStart else { return nil }
    outputEnd = try checked { try open.outputStart + (try open.videoEnd - open.sourceStart) }
    // The video's presentation ends with the stretch: references shown after the limit were written, or
    // the decode order runs past the last picture shown (a re-encoded edge reorders deeper than the stream
    // copied after it, so its decode times start earlier): the track lasts what it shows, not the sum of
    // its samples' decode durations.
    file?.videoPresentationEnd = outputEnd
    return MediaRange(start: open.sourceStart, end: open.videoEnd)
  }

  private func emitVideo(_ packet: EncodedPacket, lasting duration: MediaDuration) throws {
    guard var open = stretch, let file else { return }
    // Shown after the limit: written for the frames that refer to it, hidden by the video's edit list.
    let hidden = packet.time >= limit
    let stop =
      hidden
      ? packet.time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
      : packet.time.advanced(by: duration, notAfter: limit)
    guard stop > packet.time else { return }
    // Decode times keep their distance to presentation times (B-frames decode before they are shown), so
    // a reordered stretch starts with a decode time before its output start; the muxer's signed
    // composition offsets bring the first one to zero.
    let time = try checked { try open.outputStart + (try packet.time - open.sourceStart) }
    let decodeTime = try checked { try open.outputStart + (try packet.decodeTime - open.sourceStart) }
    if let last = lastDecodeTime, decodeTime <= last { return skippedVideoPackets += 1 }
    lastDecodeTime = decodeTime
    try file.writeVideo(
      packet.data, time: time, decodeTime: decodeTime, duration: try checked { try stop - packet.time },
      isKeyframe: packet.isKeyframe)
    if hidden {
      hiddenVideoPackets += 1
      return
    }
    videoPackets += 1
    open.videoEnd = max(open.videoEnd, stop)
    stretch = open
  }

  /// Writes the waiting audio frames that start before `limit`: while the stretch is open, those that
  /// end by then; when it closes, those that end at most 20 ms after it.
  private func flushAudio(upTo limit: MediaTime, closing: Bool = false) throws {
    guard let file, let audio, var open = stretch else { return }
    defer { stretch = open }
    let slack = MediaDuration.microseconds(20_000)
    while let packet = pendingAudio.first, packet.time < limit {
      let end = packet.time.advanced(by: packet.duration, notAfter: MediaTime(microseconds: .max))
      if !closing, end > limit { break }
      pendingAudio.removeFirst()
      if closing, end > limit.advanced(by: slack, notAfter: MediaTime(microseconds: .max)) { continue }
      guard packet.format.codec == .aac, packet.format.sampleRate == audio.sampleRate,
        packet.format.channels == audio.channels
      else { continue }
      if packet.time < open.sourceStart {
        // Audio that starts before the file's first video frame (the AAC encoder's priming frame, a frame
        // that straddles the start) is the audio track's lead-in, hidden by an edit list: a decoder needs
        // it to produce the first samples without a fade-in. Elsewhere it is cut.
        guard open.outputStart == .zero, audioPackets == 0,
          end.advanced(by: .microseconds(1_000), notAfter: MediaTime(microseconds: .max)) >= open.sourceStart
        else { continue }
        guard try declareAudio(in: file, audio) else { return }
        let lead = try checked { try open.sourceStart - packet.time }
        file.audioLeadIn = lead
        try file.writeAudio(packet.data, time: try checked { try .zero - lead }, duration: packet.duration)
        audioPackets += 1
        open.audioEnd = end
        audioOutputEnd = try checked { try packet.duration - lead }
        continue
      }
      // Never overlap the previous frame in the file: a frame that starts up to 2 ms early (ms-rounded
      // record times) is moved after it; one that starts earlier repeats audio already written.
      let previousEnd = open.audioEnd ?? open.sourceStart
      if packet.time < (try? previousEnd - .microseconds(2_000)) ?? previousEnd { continue }
      let exact = try checked { try open.outputStart + (try max(packet.time, previousEnd) - open.sourceStart) }
      guard let outputTime = try audioPlace(exact, lasting: packet.duration, in: file, audio) else { continue }
      // The first frame after the file's start: the audio begins there, not at 0.
      guard try declareAudio(in: file, audio) else { return }
      if audioPackets == 0 { file.audioStart = outputTime }
      try file.writeAudio(packet.data, time: outputTime, duration: packet.duration)
      audioPackets += 1
      open.audioEnd = max(end, open.audioEnd ?? end)
      audioOutputEnd = try checked { try outputTime + packet.duration }
    }
  }

  /// Where in the file an audio frame of `duration` that belongs at `exact` goes, once the audio track
  /// runs on to it; nil when it would overlap what was written by more than half a frame (it is left out).
  ///
  /// An MP4 sound track has no holes: between two frames that do not touch (sound missing around a cut
  /// hole — a frame straddling the hole's edge is left out —, or missing within a stretch) the earlier
  /// frame's sample was made to last until the later one. Players that let the sound run as the clock
  /// (most, and ffmpeg decoding the file) play what the sample decodes to — one frame — and go on: every
  /// such hole pulled the sound ahead of the picture, more at each (a library with two holes exported
  /// 48 then 136 ms early). So:
  /// - a frame within 2 ms of where the track has got to goes at its own time (millisecond record times,
  ///   a drifting clock: followed as they always were, a sample a little longer or shorter);
  /// - one within half a frame of it goes where the track has got to (the track stays a run of frames);
  /// - further on, the hole is filled with frames of AAC-LC silence up to the frame nearest its time:
  ///   within half a frame at every hole, never adding up.
  /// Not filled: a hole longer than ``maximumSilence`` (the sample before it lasts over it, as before),
  /// sound whose frames are not 1024 samples of AAC-LC (another object type, 960-sample frames, more
  /// than two channels: ``silentFrame(for:)``), and frames whose stated duration is not one frame.
  private func audioPlace(
    _ exact: MediaDuration, lasting duration: MediaDuration, in file: MP4File, _ audio: TrackFormat
  ) throws -> MediaDuration? {
    guard let cursor = audioOutputEnd, audio.sampleRate > 0 else { return exact }
    let frame = 1024 * 1_000_000 / Int64(audio.sampleRate)
    // A frame whose duration says it is not one whole AAC frame (a container's odd durations): as before.
    guard abs(duration.microseconds - frame) <= frame / 10 else { return exact }
    let drift = try checked { try exact - cursor }.microseconds
    if abs(drift) <= 2_000 { return exact }
    if drift < -frame / 2 { return nil }
    if drift <= frame / 2 { return cursor }
    guard drift <= Self.maximumSilence.microseconds, let silence = Self.silentFrame(for: audio) else { return exact }
    let frames = (drift + frame / 2) / frame
    var time = cursor
    for _ in 0..<frames {
      try file.writeAudio(silence, time: time, duration: duration)
      time = try checked { try time + duration }
      filledAudioPackets += 1
    }
    return time
  }

  /// The longest hole in the sound filled with silence (10 s): a longer one, from a clock that jumped,
  /// is left to the sample before it.
  static let maximumSilence = MediaDuration.microseconds(10_000_000)

  /// One frame (1024 samples) of AAC-LC silence for sound of `audio`'s format; nil for sound that such a
  /// frame cannot continue: another object type than AAC-LC (2), 960-sample frames, or other than one or
  /// two channels.
  ///
  /// The frame is a raw data block holding one channel element (a channel pair for two channels) whose
  /// `max_sfb` is 0: no spectral data, so it decodes to silence at any rate. These are the bytes
  /// libavcodec's AAC encoder makes of silence, at every rate (a test compares them with it); written as
  /// constants, an export of H.264 + AAC with holes in its sound loads none of FFmpeg's libraries.
  static func silentFrame(for audio: TrackFormat) -> Data? {
    // AudioSpecificConfig (ISO/IEC 14496-3, 1.6.2.1): object type (5 bits), rate index (4; 15: a 24-bit
    // rate follows), channel configuration (4), then GASpecificConfig's frameLengthFlag (1: 960 samples).
    let config = [UInt8](audio.audioSpecificConfig)
    var position = 0
    func read(_ count: Int) -> Int? {
      guard position + count <= config.count * 8 else { return nil }
      var value = 0
      for _ in 0..<count {
        value = value << 1 | Int(config[position / 8] >> (7 - position % 8) & 1)
        position += 1
      }
      return value
    }
    guard read(5) == 2, let rateIndex = read(4), rateIndex != 15 || read(24) != nil, let channels = read(4),
      read(1) == 0, channels == audio.channels
    else { return nil }
    switch channels {
    case 1: return Data([0x01, 0x18, 0x20, 0x07])
    case 2: return Data([0x21, 0x10, 0x04, 0x60, 0x8C, 0x1C])
    default: return nil
    }
  }

  /// Finishes the MP4 and installs it at `destination` (only a regular file there is replaced); the
  /// working file is gone afterwards either way.
  func finalize(installingAt destination: URL) throws {
    guard let file else { throw MediaError(.writeFailed, "the recording is closed") }
    self.file = nil
    defer { try? FileManager.default.removeItem(atPath: workingPath) }
    try file.finalize(installingAt: destination)
  }

  /// Closes the unfinished file and removes it.
  func abandon() {
    file?.close()
    file = nil
    try? FileManager.default.removeItem(atPath: workingPath)
  }

  /// Keeps the unfinished file (fragmented, readable up to its last fragment) and closes it.
  func close() {
    file?.close()
    file = nil
  }

  private func checked<Value>(_ body: () throws -> Value) throws -> Value { try writing(workingPath, body) }
}
