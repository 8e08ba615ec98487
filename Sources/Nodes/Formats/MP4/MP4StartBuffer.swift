import PipelineGraph

/// What a recording holds until its MP4 can be created: the one waiting rule of the export
/// (``Exporter``), the recorder node (``MP4Writer``) and the replay's recording task (``ReplayRecorder``).
///
/// An MP4 declares its tracks in its header, before any sample, so a file that is to carry sound needs
/// the sound's format before it exists. Video from its first keyframe is held until the first audio
/// packet comes (a camera's or a file's sound often starts seconds after its picture), or until
/// ``MP4Writer/audioWait`` of video or ``MP4Writer/audioWaitBytes`` of it went by without one (the
/// file is then made without sound; a sound that begins later is given its track then,
/// `MP4Recording.addAudio(_:)`; the export and the recorder node report the absence before it); audio is
/// held beside it (the last ``maximumAudio`` packets) and written once the file exists. A gap or a seek
/// before then makes the file at once: what was held is kept.
struct MP4StartBuffer {
  /// Audio packets held at most (a few seconds' worth: the oldest go first).
  static let maximumAudio = 256

  /// Whether the file is to carry sound (it waits for the sound's first packet).
  let expectsAudio: Bool
  /// The video held, from its first keyframe.
  private(set) var video: [EncodedPacket] = []
  private var videoBytes = 0
  private var audio: [EncodedPacket] = []
  /// The first audio packet's format (kept once the file exists: it says why a file has no sound).
  private(set) var audioFormat: TrackFormat?

  /// A buffer for a file with sound (`expectsAudio`) or without.
  init(expectsAudio: Bool) {
    self.expectsAudio = expectsAudio
  }

  /// The first video packet held: the file's first frame and video format.
  var first: EncodedPacket? { video.first }

  /// Holds a video packet; nothing before the first keyframe is held (false: the caller skipped it).
  @discardableResult
  mutating func hold(video packet: EncodedPacket) -> Bool {
    guard packet.isKeyframe || !video.isEmpty else { return false }
    video.append(packet)
    videoBytes += packet.data.count
    return true
  }

  /// Holds an audio packet (its format is the sound's, if it is the first).
  mutating func hold(audio packet: EncodedPacket) {
    audioFormat = audioFormat ?? packet.format
    audio.append(packet)
    if audio.count > Self.maximumAudio { audio.removeFirst() }
  }

  /// Whether the file can be created: a keyframe is held and the sound's format is known, or not
  /// expected, or waited for long enough; `force` (the stream ends, a gap comes) skips the wait.
  func isReady(force: Bool) -> Bool {
    guard let first else { return false }
    guard !force, expectsAudio, audioFormat == nil, videoBytes < MP4Writer.audioWaitBytes else { return true }
    let waited = (try? (video.last?.time ?? first.time) - first.time) ?? .zero
    return waited >= MP4Writer.audioWait
  }

  /// Hands over what was held, in the order it came per track, and holds nothing more.
  mutating func take() -> (video: [EncodedPacket], audio: [EncodedPacket]) {
    defer { drop() }
    return (video, audio)
  }

  /// Drops what was held (the stretch it began was cut off before the file existed).
  mutating func drop() {
    video = []
    videoBytes = 0
    audio = []
  }
}
