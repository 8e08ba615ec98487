import Foundation
import Nodes
import PipelineGraph

/// Generates a synthetic recording object by object: real encoded video (moving picture) and audio
/// (tone), cut into TSEG objects at segment boundaries, holes and format changes.
///
/// The encoders carry over from one object to the next, so GOPs span objects as a camera's do; after a
/// hole or a format change the next frame is a keyframe and the audio encoder restarts.
///
/// States: generating → exhausted (``nextObject()`` returns nil from then on). Not thread-safe: one owner
/// uses it, one call at a time.
public final class SyntheticRecording {
  /// The options.
  public let options: LibrarySynthesizer.Options
  /// The video frames generated so far: time (UTC ms) and keyframe flag.
  public private(set) var videoFrames: [(time: Int64, isKeyframe: Bool)] = []
  /// The audio records generated so far.
  public private(set) var audioRecords = 0

  private let start: Int64
  private let end: Int64
  private let holes: [(Int64, Int64)]
  /// Stretches without picture inside objects.
  private let videoHoles: [(Int64, Int64)]
  /// Stretches where the other audio channels carry nothing.
  private let otherAudioHoles: [(Int64, Int64)]
  /// Stretches where the other video channels carry nothing.
  private let otherVideoHoles: [(Int64, Int64)]
  private let boundaries: [Int64]
  private var nextBoundary = 0
  private var video: TestPatternEncoder
  private var frameIndex = 0
  private var sinceKeyframe = 0
  private var previousInHole = true
  private var audio: ToneEncoder?
  private var audioSampleClock: Int64 = 0
  private var audioProduced: Int64 = 0
  private let audioFrameSamples: Int
  private var pendingAudio: [SegmentRecord] = []
  private var generator: SeededGenerator?
  private let videoTrack: TrackID
  private let audioTrack: TrackID

  /// Prepares the encoders; nothing is generated until ``nextObject()``.
  public init(options: LibrarySynthesizer.Options) throws {
    let o = options
    guard o.durationSeconds > 0, o.segmentSeconds > 0, o.fps > 0, o.gop > 0 else {
      throw MediaError(.invalidArgument, "duration, segment length, fps and GOP must be positive")
    }
    // Values from outside meet arithmetic below: bound them first, so nothing can overflow.
    guard o.durationSeconds <= 366 * 86_400, o.segmentSeconds <= 86_400, o.fps <= 1_000,
      MediaTime.validMilliseconds.contains(o.startMilliseconds),
      MediaTime.validMilliseconds.contains(o.startMilliseconds + Int64(o.durationSeconds) * 1000)
    else {
      throw MediaError(
        .invalidArgument, "the recording must lie in representable time, last at most a year, ≤ 1000 fps")
    }
    for gap in o.gaps + o.videoGaps + o.otherAudioGaps + o.otherVideoGaps
    where gap.offset < 0 || gap.length <= 0 || gap.offset > o.durationSeconds
      || gap.length > o.durationSeconds
    {
      throw MediaError(.invalidArgument, "gap \(gap.offset):\(gap.length) does not lie inside the recording")
    }
    guard !o.otherAudioChannels.contains(o.audioChannel), Set(o.otherAudioChannels).count == o.otherAudioChannels.count,
      !o.otherVideoChannels.contains(o.videoChannel), Set(o.otherVideoChannels).count == o.otherVideoChannels.count
    else {
      throw MediaError(.invalidArgument, "the other channels must differ from the first of their kind and each other")
    }
    for change in o.videoChanges where change.offsetSeconds < 0 || change.offsetSeconds > o.durationSeconds {
      throw MediaError(
        .invalidArgument, "a video change at \(change.offsetSeconds) s does not lie inside the recording")
    }
    self.options = options
    generator = o.seed.map(SeededGenerator.init(seed:))
    start = o.startMilliseconds
    end = start + Int64(o.durationSeconds) * 1000
    holes = o.gaps.map {
      (o.startMilliseconds + Int64($0.offset) * 1000, o.startMilliseconds + Int64($0.offset + $0.length) * 1000)
    }
    videoHoles = o.videoGaps.map {
      (o.startMilliseconds + Int64($0.offset) * 1000, o.startMilliseconds + Int64($0.offset + $0.length) * 1000)
    }
    otherAudioHoles = o.otherAudioGaps.map {
      (o.startMilliseconds + Int64($0.offset) * 1000, o.startMilliseconds + Int64($0.offset + $0.length) * 1000)
    }
    otherVideoHoles = o.otherVideoGaps.map {
      (o.startMilliseconds + Int64($0.offset) * 1000, o.startMilliseconds + Int64($0.offset + $0.length) * 1000)
    }
    var cuts = Set<Int64>([start, end])
    var t = start
    while t < end {
      cuts.insert(t)
      t += Int64(o.segmentSeconds) * 1000
    }
    for hole in holes + videoHoles + otherVideoHoles { cuts.formUnion([hole.0, hole.1]) }
    for change in o.videoChanges where change.startsObject { cuts.insert(start + Int64(change.offsetSeconds) * 1000) }
    boundaries = cuts.filter {
      $0 >= o.startMilliseconds && $0 <= o.startMilliseconds + Int64(o.durationSeconds) * 1000
    }
    .sorted()
    video = try TestPatternEncoder(codec: o.videoCodec, width: o.width, height: o.height, fps: o.fps)
    if let codec = o.audioCodec {
      audio = try ToneEncoder(codec: codec, sampleRate: o.audioSampleRate, channels: o.audioChannels)
    }
    audioFrameSamples = audio?.frameSamples ?? 1
    videoTrack = TrackID(.video, channel: o.videoChannel)
    audioTrack = TrackID(.audio, channel: o.audioChannel)
  }

  private func randomBytes(_ count: Int) -> [UInt8] {
    if generator == nil {
      var system = SystemRandomNumberGenerator()
      return (0..<count).map { _ in UInt8.random(in: 0...255, using: &system) }
    }
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator!) }
  }

  private func inHole(_ time: Int64) -> Bool { holes.contains { time >= $0.0 && time < $0.1 } }

  /// The next object and its index entry (URL `objects/<id>.tseg`), or nil at the end.
  public func nextObject() throws -> (RecordingIndex.Segment, Data)? {
    while nextBoundary + 1 < boundaries.count {
      let objectStart = boundaries[nextBoundary]
      let objectEnd = boundaries[nextBoundary + 1]
      nextBoundary += 1
      if inHole(objectStart) { continue }
      var records = try videoRecords(until: objectEnd) + (try audioRecords(until: objectEnd))
      records += copies(of: records)
      let sorted = records.enumerated().sorted { lhs, rhs in
        (lhs.element.timestampMilliseconds, lhs.element.track.kind.rawValue, lhs.offset)
          < (rhs.element.timestampMilliseconds, rhs.element.track.kind.rawValue, rhs.offset)
      }.map(\.element)
      let key: [UInt8]? = options.encrypt ? randomBytes(16) : nil
      let object = try SegmentWriter.object(
        records: sorted, range: MediaRange(startMilliseconds: objectStart, endMilliseconds: objectEnd), key: key,
        iv: key == nil ? nil : randomBytes(16))
      let id = String(objectStart)
      var tracks: [RecordingIndex.Segment.Track] = []
      let others =
        options.otherVideoChannels.map { TrackID(.video, channel: $0) }
        + options.otherAudioChannels.map { TrackID(.audio, channel: $0) }
      for track in [videoTrack, audioTrack] + others {
        if let codec = sorted.first(where: { $0.track == track })?.codec {
          tracks.append(.init(kind: track.kind.description, channelId: Int(track.channel), codec: codec.description))
        }
      }
      let segment = RecordingIndex.Segment(
        id: id, startMs: objectStart, endMs: objectEnd, url: "objects/\(id).tseg", size: object.count,
        sha256: SHA256Digest.hexHash(object), key: key.map { Hex.encode($0) }, tracks: tracks)
      return (segment, object)
    }
    return nil
  }

  /// The records of `records` again on each of the other channels of their kind, but in their holes.
  private func copies(of records: [SegmentRecord]) -> [SegmentRecord] {
    let kinds = [
      (audioTrack, otherAudioHoles, options.otherAudioChannels, TrackKind.audio),
      (videoTrack, otherVideoHoles, options.otherVideoChannels, TrackKind.video),
    ]
    return kinds.flatMap { track, holes, channels, kind in
      let kept = records.filter { record in
        record.track == track
          && !holes.contains { record.timestampMilliseconds >= $0.0 && record.timestampMilliseconds < $0.1 }
      }
      return channels.flatMap { channel in
        kept.map { record in
          var copy = record
          copy.track = TrackID(kind, channel: channel)
          return copy
        }
      }
    }
  }

  private func videoRecords(until objectEnd: Int64) throws -> [SegmentRecord] {
    var records: [SegmentRecord] = []
    let o = options
    while true {
      let time = start + Int64(frameIndex) * 1000 / Int64(o.fps)
      guard time < objectEnd, time < end else { break }
      defer { frameIndex += 1 }
      if inHole(time) || videoHoles.contains(where: { time >= $0.0 && time < $0.1 }) {
        previousInHole = true
        continue
      }
      var forceKey = previousInHole || sinceKeyframe >= o.gop
      if let change = o.videoChanges.first(where: { start + Int64($0.offsetSeconds) * 1000 == time }) {
        video = try TestPatternEncoder(codec: change.codec, width: change.width, height: change.height, fps: o.fps)
        forceKey = true
      }
      previousInHole = false
      let look: TestPatternEncoder.Look = !o.beacon ? .pattern : (time - start) % 1000 < 100 ? .flash : .dim
      let unit = try video.encode(index: frameIndex, keyframe: forceKey, look: look)
      sinceKeyframe = unit.isKeyframe ? 1 : sinceKeyframe + 1
      records.append(
        SegmentRecord(
          track: videoTrack, codec: video.codec, isKeyframe: unit.isKeyframe, timestampMilliseconds: time,
          payload: unit.data))
      videoFrames.append((time, unit.isKeyframe))
    }
    return records
  }

  private func audioRecords(until objectEnd: Int64) throws -> [SegmentRecord] {
    guard options.audioCodec != nil else { return [] }
    let rate = Int64(options.audioSampleRate)
    // Encode until a record at or after the object's end exists (the encoder's delay means output lags).
    while pendingAudio.last.map({ $0.timestampMilliseconds < objectEnd }) ?? true {
      let time = start + audioSampleClock * 1000 / rate
      if time >= end || inHole(time) {
        // The sound stops: the encoder gives what it holds; after a hole the device starts a new one.
        if let encoder = audio {
          try take(try encoder.finish(), from: encoder)
          audio = nil
        }
        if time >= end { break }
        audioSampleClock += Int64(audioFrameSamples)
        continue
      }
      let encoder = try audio ?? startAudio()
      try take(try encoder.encodeNext(beaconAt: options.beacon ? audioSampleClock : nil), from: encoder)
      audioSampleClock += Int64(encoder.frameSamples)
    }
    let split = pendingAudio.firstIndex { $0.timestampMilliseconds >= objectEnd } ?? pendingAudio.count
    let records = pendingAudio.prefix(split).filter { !inHole($0.timestampMilliseconds) }
    pendingAudio.removeFirst(split)
    audioRecords += records.count
    return Array(records)
  }

  /// A new audio encoder whose first sample is the sound at the audio clock (the start, or the end of
  /// a hole).
  private func startAudio() throws -> ToneEncoder {
    let encoder = try ToneEncoder(
      codec: options.audioCodec ?? .aac, sampleRate: options.audioSampleRate, channels: options.audioChannels)
    audio = encoder
    audioProduced = audioSampleClock
    return encoder
  }

  /// Queues `payloads` of `encoder` as records, each timed by the sound it carries: the encoder's first
  /// one is its priming (before the samples given first: before the start or inside the hole before
  /// it, so left out), as is what the padding of the last one carries past the end.
  private func take(_ payloads: [Data], from encoder: ToneEncoder) throws {
    let rate = Int64(options.audioSampleRate)
    for payload in payloads {
      let recordTime = start + (audioProduced - Int64(encoder.delay)) * 1000 / rate
      audioProduced += Int64(encoder.frameSamples)
      guard recordTime >= start, recordTime < end, !inHole(recordTime) else { continue }
      pendingAudio.append(
        SegmentRecord(
          track: audioTrack, codec: encoder.codec, sampleRate: options.audioSampleRate,
          channels: options.audioChannels, timestampMilliseconds: recordTime, payload: payload))
    }
  }
}
