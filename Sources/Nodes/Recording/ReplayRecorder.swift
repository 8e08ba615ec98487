import Dispatch
import Foundation
import PipelineGraph

/// Records what a replay plays into an MP4 (the seed's RecordingTask): stream copy of one video track
/// and optionally its AAC audio (the replay graph hands it G.711 already transcoded to AAC), at source
/// timing whatever the speed, through the recording path the export uses (`MP4Recording`).
///
/// - It records what plays, not what was read ahead: packets wait until the replay's position has
///   passed them (``advance(to:)``); a seek drops what was read but never played. At most
///   ``maximumUnplayedBytes`` of them wait (when nothing moves the position, the oldest go first).
/// - It starts at the first video keyframe not earlier than ``startsAt`` (audio before it is dropped).
/// - A seek (``discontinuity()``) or a hole in the video closes the stretch so far; the next one starts
///   at the next keyframe where the file ends (no filler).
/// - A change of the video's codec or picture size ends it with `unsupportedFormat`; played packets
///   arriving faster than the file is written (over ``maximumPendingBytes`` handed to the writing
///   queue and not written yet; what was read ahead and not played does not count) end it with
///   `fellBehind` at once: the handler of ``whenOverrun(_:)`` hears of it, and nothing more is
///   written. A file that cannot be written ends it with `writeFailed`. Any of these removes the
///   unfinished file.
///
/// Every method may be called from any thread (the replay calls ``take(_:)`` and ``advance(to:)`` on its
/// executor, ``discontinuity()`` and ``restarted()`` from its callers' threads); each only hands the work
/// to the recorder's own queue: disk writes never hold the replay up.
///
/// States: recording → finished: after the first ``finish(playedToTheEnd:_:)`` (whose completion runs
/// once, on that queue) later calls have no effect, and a later `finish` never calls its completion.
public final class ReplayRecorder: @unchecked Sendable {
  /// The final MP4's path.
  public let destination: URL
  /// The recorded video track.
  public let videoTrack: TrackID
  /// The recorded audio track (AAC only), if any.
  public let audioTrack: TrackID?
  /// The most bytes of played packets waiting to be written before the recorder gives up
  /// (`fellBehind`).
  public let maximumPendingBytes: Int
  /// The most bytes of packets read but not played yet that wait for the position: well above what a
  /// replay reads ahead (16 MB).
  public static let maximumUnplayedBytes = 64 << 20
  /// Nothing earlier is recorded (where the replay was when the task started).
  public let startsAt: MediaTime

  private let queue: DispatchQueue
  private let pending = Locked(Pending())
  // Confined to `queue`.
  private var recording: MP4Recording?
  /// Until the file exists: video from the first keyframe on, and audio.
  private var start: MP4StartBuffer
  private var needsKeyframe = true
  private var lastVideo: EncodedPacket?
  private var lastAudio: MediaTime?
  /// After a restart: packets read again up to these times were written already.
  private var skipVideoThrough: MediaTime?
  private var skipAudioThrough: MediaTime?
  private var failure: MediaError?

  struct Pending {
    /// Bytes handed to the queue and not written yet.
    var bytes = 0
    var overrun = false
    var onOverrun: (@Sendable () -> Void)?
    var finished = false
    /// Packets read but not played yet, in the order read, and their bytes (at most
    /// ``maximumUnplayedBytes``: the oldest go first when nothing moves the position).
    var unplayed: [EncodedPacket] = []
    var unplayedBytes = 0
    /// The position played so far: packets up to it are written.
    var played = MediaTime(microseconds: .min)
  }

  /// A recorder of `videoTrack` (and `audioTrack`) into `destination` from `startsAt` on, writing on
  /// `queue` (serial; its own by default: a disk that stalls it is what `fellBehind` is for).
  public init(
    destination: URL, videoTrack: TrackID, audioTrack: TrackID?, startsAt: MediaTime = MediaTime(microseconds: .min),
    maximumPendingBytes: Int = 64 << 20, queue: DispatchQueue = DispatchQueue(label: "tipipe.recorder")
  ) {
    self.queue = queue
    self.destination = destination
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.startsAt = startsAt
    self.maximumPendingBytes = maximumPendingBytes
    start = MP4StartBuffer(expectsAudio: audioTrack != nil)
  }

  /// The tracks it records.
  public var tracks: Set<TrackID> { Set([videoTrack] + (audioTrack.map { [$0] } ?? [])) }

  /// Takes a packet the replay read (other tracks, and anything before ``startsAt``, are ignored): it
  /// is written once the position has passed it.
  public func take(_ packet: EncodedPacket) {
    guard tracks.contains(packet.track), packet.time >= startsAt else { return }
    let ready = pending.withLock { state -> [EncodedPacket] in
      guard !state.finished, !state.overrun else { return [] }
      guard packet.time <= state.played else {
        state.unplayed.append(packet)
        state.unplayedBytes += packet.data.count
        if state.unplayedBytes > Self.maximumUnplayedBytes {
          var dropped = 0
          while dropped < state.unplayed.count && state.unplayedBytes > Self.maximumUnplayedBytes / 2 {
            state.unplayedBytes -= state.unplayed[dropped].data.count
            dropped += 1
          }
          state.unplayed.removeFirst(dropped)
        }
        return []
      }
      return [packet]
    }
    send(ready)
  }

  /// Whether writing fell behind by more than ``maximumPendingBytes`` (the recording ends with
  /// `fellBehind`; nothing more is written).
  public var hasFallenBehind: Bool { pending.withLock { $0.overrun } }

  /// Calls `handler` once, on a global queue, when writing falls behind by more than
  /// ``maximumPendingBytes`` (at once if it already has): the owner ends the task then.
  public func whenOverrun(_ handler: @escaping @Sendable () -> Void) {
    let already = pending.withLock { state -> Bool in
      guard !state.overrun else { return true }
      state.onOverrun = handler
      return false
    }
    if already { DispatchQueue.global().async(execute: handler) }
  }

  /// The replay's position reached `position`: what was read up to it is written.
  public func advance(to position: MediaTime) {
    let ready = pending.withLock { state -> [EncodedPacket] in
      state.played = max(state.played, position)
      guard !state.finished, !state.overrun, !state.unplayed.isEmpty else { return [] }
      let played = state.played
      let ready = state.unplayed.filter { $0.time <= played }
      state.unplayed.removeAll { $0.time <= played }
      state.unplayedBytes -= ready.reduce(0) { $0 + $1.data.count }
      return ready
    }
    send(ready)
  }

  /// Hands played packets to the queue, unless the writing has fallen too far behind.
  private func send(_ packets: [EncodedPacket]) {
    guard !packets.isEmpty else { return }
    let size = packets.reduce(0) { $0 + $1.data.count }
    let (accepted, overrun) = pending.withLock { state -> (Bool, (@Sendable () -> Void)?) in
      guard !state.overrun else { return (false, nil) }
      state.bytes += size
      guard state.bytes > maximumPendingBytes else { return (true, nil) }
      state.overrun = true
      defer { state.onOverrun = nil }
      return (false, state.onOverrun)
    }
    // Not on `queue`: it is the one that fell behind. The caller may hold its own locks.
    if let overrun { DispatchQueue.global().async(execute: overrun) }
    guard accepted else { return }
    queue.async { [self] in
      for packet in packets {
        let overrun = pending.withLock { state -> Bool in
          state.bytes -= packet.data.count
          return state.overrun
        }
        if !overrun { write(packet) }
      }
    }
  }

  /// The replay jumped (seek, new graph, gap): what was read but not played is dropped, and the next
  /// stretch starts at the next keyframe.
  public func discontinuity() {
    pending.withLock { state in
      state.unplayed = []
      state.unplayedBytes = 0
      state.played = MediaTime(microseconds: .min)
    }
    queue.async { [self] in closeStretch() }
  }

  /// The replay rebuilt its graph at the position (an output came or went): what was read but not played
  /// is dropped, and what is read again up to what was already written is skipped; the stretch goes on.
  public func restarted() {
    pending.withLock { state in
      state.unplayed = []
      state.unplayedBytes = 0
    }
    queue.async { [self] in
      skipVideoThrough = lastVideo?.time
      skipAudioThrough = lastAudio
    }
  }

  /// Stops taking packets, writes what was played (and, when the replay `playedToTheEnd`, everything
  /// read) and finishes the file: the duration in ms, or why there is no file (`noMedia` when
  /// nothing could be written). Once only; later calls get nothing (the caller caches the result).
  public func finish(playedToTheEnd: Bool, _ completion: @escaping @Sendable (Result<Int64, MediaError>) -> Void) {
    let (first, rest, overrun) = pending.withLock { state -> (Bool, [EncodedPacket], Bool) in
      defer {
        state.finished = true
        state.unplayed = []
        state.unplayedBytes = 0
      }
      return (!state.finished, playedToTheEnd ? state.unplayed : [], state.overrun)
    }
    guard first else { return }
    guard !overrun else {
      // The result is known: it does not wait for the writes that fell behind (a stalled disk), only the
      // unfinished file's removal does.
      DispatchQueue.global().async { completion(.failure(self.overrunError)) }
      queue.async { [self] in fail(overrunError) }
      return
    }
    // What was read and never played is written at a natural end (it is in memory already: no limit).
    queue.async { [self] in
      for packet in rest where !pending.withLock({ $0.overrun }) { write(packet) }
      completion(conclude())
    }
  }

  // MARK: On the queue

  private func write(_ packet: EncodedPacket) {
    guard failure == nil else { return }
    do {
      if packet.track == audioTrack {
        if let skip = skipAudioThrough {
          guard packet.time > skip else { return }
          skipAudioThrough = nil
        }
        lastAudio = packet.time
        guard let recording else {
          start.hold(audio: packet)
          return try openIfReady(force: false)
        }
        // A sound that begins after the file was made without it gets its track now.
        if recording.audio == nil { _ = recording.addAudio(packet.format) }
        if recording.isRecording { try recording.writeAudio(packet) }
        return
      }
      if let skip = skipVideoThrough {
        guard packet.time > skip else { return }
        skipVideoThrough = nil
      }
      // Going back (a restart not yet told) or over a hole: the stretch ends; no filler (T18).
      if let last = lastVideo,
        packet.time < last.time
          || packet.time > lastVideoEnd.advanced(by: .microseconds(1_000), notAfter: .init(microseconds: .max))
      {
        closeStretch()
      }
      if needsKeyframe {
        guard packet.isKeyframe else { return }
        needsKeyframe = false
        if let recording {
          guard GapDetector.sameVideo(packet.format, recording.video) else {
            throw MediaError(.unsupportedFormat, "the video changed to \(packet.format) during the recording")
          }
          recording.begin(at: packet.time)
        }
      }
      lastVideo = packet
      guard let recording else {
        start.hold(video: packet)
        return try openIfReady(force: false)
      }
      guard GapDetector.sameVideo(packet.format, recording.video) else {
        throw MediaError(.unsupportedFormat, "the video changed to \(packet.format) during the recording")
      }
      try recording.writeVideo(packet)
    } catch {
      fail(MediaError(error))
    }
  }

  /// Creates the file once ``MP4StartBuffer`` says it can be, or `force`.
  private func openIfReady(force: Bool) throws {
    guard recording == nil, start.isReady(force: force), let first = start.first else { return }
    let audio = audioTrack == nil ? nil : start.audioFormat.flatMap { $0.codec == .aac ? $0 : nil }
    do {
      try OutputFile.validate(destination)
      let recording = try MP4Recording(
        workingPath: OutputFile.workingPath(for: destination), video: first.format, audio: audio,
        reservedIndexBytes: 1 << 20)
      recording.begin(at: first.time)
      self.recording = recording
    } catch {
      throw MediaError(.writeFailed, "cannot create the recording beside \(destination.path): \(error)")
    }
    let (video, sound) = start.take()
    for packet in video {
      guard let recording, GapDetector.sameVideo(packet.format, recording.video) else {
        throw MediaError(.unsupportedFormat, "the video changed to \(packet.format) during the recording")
      }
      try recording.writeVideo(packet)
    }
    for packet in sound { try recording?.writeAudio(packet) }
  }

  /// Where the last video frame ends (the open stretch's end).
  private var lastVideoEnd: MediaTime {
    lastVideo.map { $0.time.advanced(by: $0.duration, notAfter: MediaTime(microseconds: .max)) }
      ?? MediaTime(microseconds: 0)
  }

  private func closeStretch() {
    needsKeyframe = true
    guard failure == nil else { return }
    do {
      // What was played while the file waited for its sound is kept: the file is made now (the sound
      // joins it when it begins), as the export does at a gap.
      if recording == nil {
        guard start.first != nil else { return start.drop() }
        try openIfReady(force: true)
      }
      try recording?.end(at: lastVideoEnd)
    } catch {
      fail(MediaError(error))
    }
  }

  private func fail(_ error: MediaError) {
    guard failure == nil else { return }
    failure = error.kind == .ioFailed ? MediaError(.writeFailed, error.message) : error
    recording?.abandon()
    recording = nil
    start.drop()
  }

  private var overrunError: MediaError {
    MediaError(.fellBehind, "writing fell behind the replay by more than \(maximumPendingBytes) bytes")
  }

  private func conclude() -> Result<Int64, MediaError> {
    if pending.withLock({ $0.overrun }) { fail(overrunError) }
    if failure == nil, recording == nil, start.first != nil {
      do { try openIfReady(force: true) } catch { fail(MediaError(error)) }
    }
    if let failure { return .failure(failure) }
    guard let recording else { return .failure(MediaError(.noMedia, "no video keyframe was recorded")) }
    do {
      if recording.isRecording {
        try recording.end(at: lastVideoEnd)
      }
      guard recording.videoPackets > 0 else {
        recording.abandon()
        return .failure(MediaError(.noMedia, "no video was recorded"))
      }
      let duration = recording.outputEnd.microseconds / 1000
      try recording.finalize(installingAt: destination)
      self.recording = nil
      return .success(duration)
    } catch {
      recording.abandon()
      self.recording = nil
      let failure = MediaError(error)
      return .failure(failure.kind == .noMedia ? failure : MediaError(.writeFailed, failure.message))
    }
  }
}
