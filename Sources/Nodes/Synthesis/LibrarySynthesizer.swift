import Foundation
import PipelineGraph

/// Writes a synthetic recording library (`tipipe synth`): real encoded media of a moving picture and a
/// tone, cut into TSEG objects, with `index.json` — the test-harness injector.
public struct LibrarySynthesizer {
  /// A change of the video's parameters at a point of the recording (a fault builder for format
  /// changes at a boundary). A new object starts there, with a keyframe.
  public struct VideoChange: Sendable {
    /// Seconds after the recording's start.
    public var offsetSeconds: Int
    /// The codec from that point.
    public var codec: Codec
    /// The size from that point.
    public var width: Int
    /// The size from that point.
    public var height: Int

    /// Creates a change.
    public init(offsetSeconds: Int, codec: Codec, width: Int, height: Int) {
      self.offsetSeconds = offsetSeconds
      self.codec = codec
      self.width = width
      self.height = height
    }
  }

  /// The options of `tipipe synth` (`spec/cli.md`).
  public struct Options: Sendable {
    /// UTC ms of the first instant.
    public var startMilliseconds: Int64 = 1_795_996_800_000
    /// Length of the recording, gaps included.
    public var durationSeconds = 60
    /// Length of one object.
    public var segmentSeconds = 60
    /// Picture width.
    public var width = 1280
    /// Picture height.
    public var height = 720
    /// Frames per second.
    public var fps = 25
    /// Frames from one keyframe to the next.
    public var gop = 50
    /// The video codec (`h264` or `h265`).
    public var videoCodec = Codec.h264
    /// The audio codec, or nil for none.
    public var audioCodec: Codec? = .aac
    /// Audio sample rate.
    public var audioSampleRate = 16000
    /// Audio channels.
    public var audioChannels = 1
    /// The video track's channel id.
    public var videoChannel: UInt8 = 0
    /// The audio track's channel id.
    public var audioChannel: UInt8 = 1
    /// Encrypt every object with its own random key.
    public var encrypt = false
    /// Holes in the recording: (offset seconds, length seconds).
    public var gaps: [(offset: Int, length: Int)] = []
    /// Changes of the video's parameters.
    public var videoChanges: [VideoChange] = []
    /// The device id written to the index.
    public var deviceId = "cam-0001"

    /// Default options.
    public init() {}
  }

  /// What was written, for tests.
  public struct Summary: Sendable {
    /// The index written to `index.json`.
    public var index: RecordingIndex
    /// Video frames written, with their times (UTC ms) and keyframe flags.
    public var videoFrames: [(time: Int64, isKeyframe: Bool)]
    /// Audio records written.
    public var audioRecords: Int
  }

  /// The options.
  public var options: Options

  /// Creates a synthesizer.
  public init(options: Options) { self.options = options }

  /// Writes `directory/index.json` and `directory/objects/*.tseg`.
  @discardableResult
  public func write(to directory: URL) throws -> Summary {
    let o = options
    guard o.durationSeconds > 0, o.segmentSeconds > 0, o.fps > 0, o.gop > 0 else {
      throw TiError(.invalidArgument, "duration, segment length, fps and GOP must be positive")
    }
    let objects = directory.appendingPathComponent("objects")
    do {
      try FileManager.default.createDirectory(at: objects, withIntermediateDirectories: true)
    } catch {
      throw TiError(.fileWriteFailed, "cannot create \(objects.path): \(error.localizedDescription)")
    }
    let start = o.startMilliseconds
    let end = start + Int64(o.durationSeconds) * 1000
    let holes = o.gaps.map { (start + Int64($0.offset) * 1000, start + Int64($0.offset + $0.length) * 1000) }
    func inHole(_ t: Int64) -> Bool { holes.contains { t >= $0.0 && t < $0.1 } }

    // Object boundaries: every segment length, at every hole's edges and at every video change.
    var cuts = Set<Int64>([start, end])
    var t = start
    while t < end {
      cuts.insert(t)
      t += Int64(o.segmentSeconds) * 1000
    }
    for hole in holes { cuts.formUnion([hole.0, hole.1].filter { $0 > start && $0 < end }) }
    for change in o.videoChanges { cuts.insert(start + Int64(change.offsetSeconds) * 1000) }
    let boundaries = cuts.filter { $0 >= start && $0 <= end }.sorted()

    var records: [SegmentRecord] = []
    var videoFrames: [(Int64, Bool)] = []
    let videoTrack = TrackID(.video, channel: o.videoChannel)
    let audioTrack = TrackID(.audio, channel: o.audioChannel)

    // Video: encode every frame outside the holes, a keyframe every GOP and after every hole or change.
    var encoder = try VideoEncoder(codec: o.videoCodec, width: o.width, height: o.height, fps: o.fps)
    var sinceKeyframe = 0
    var previousInHole = true
    let totalFrames = o.durationSeconds * o.fps
    for index in 0..<totalFrames {
      let time = start + Int64(index) * 1000 / Int64(o.fps)
      if inHole(time) {
        previousInHole = true
        continue
      }
      var forceKey = previousInHole || sinceKeyframe >= o.gop
      if let change = o.videoChanges.first(where: { start + Int64($0.offsetSeconds) * 1000 == time }) {
        encoder = try VideoEncoder(codec: change.codec, width: change.width, height: change.height, fps: o.fps)
        forceKey = true
      }
      previousInHole = false
      let unit = try encoder.encode(index: index, keyframe: forceKey)
      sinceKeyframe = unit.isKeyframe ? 1 : sinceKeyframe + 1
      records.append(
        SegmentRecord(
          track: videoTrack, codec: encoder.codec, isKeyframe: unit.isKeyframe, timestampMilliseconds: time,
          payload: unit.data))
      videoFrames.append((time, unit.isKeyframe))
    }

    // Audio: a continuous tone outside the holes.
    var audioRecords = 0
    if let audioCodec = o.audioCodec {
      var audio = try AudioEncoder(codec: audioCodec, sampleRate: o.audioSampleRate, channels: o.audioChannels)
      var produced: Int64 = 0
      var sampleClock: Int64 = 0
      var wasInHole = false
      while true {
        let time = start + sampleClock * 1000 / Int64(o.audioSampleRate)
        if time >= end { break }
        if inHole(time) {
          wasInHole = true
          sampleClock += Int64(audio.frameSamples)
          continue
        }
        if wasInHole {
          // The device restarts its audio encoder after a hole.
          audio = try AudioEncoder(codec: audioCodec, sampleRate: o.audioSampleRate, channels: o.audioChannels)
          produced = sampleClock
          wasInHole = false
        }
        for payload in try audio.encodeNext() {
          let recordTime = start + produced * 1000 / Int64(o.audioSampleRate)
          produced += Int64(audio.frameSamples)
          guard recordTime < end, !inHole(recordTime) else { continue }
          records.append(
            SegmentRecord(
              track: audioTrack, codec: audioCodec, sampleRate: o.audioSampleRate, channels: o.audioChannels,
              timestampMilliseconds: recordTime, payload: payload))
          audioRecords += 1
        }
        sampleClock += Int64(audio.frameSamples)
      }
    }
    // Interleave by time; video before audio at equal times (a stable sort keeps each track's order).
    records = records.enumerated().sorted { lhs, rhs in
      (lhs.element.timestampMilliseconds, lhs.offset) < (rhs.element.timestampMilliseconds, rhs.offset)
    }.map(\.element)

    var segments: [RecordingIndex.Segment] = []
    var cursor = 0
    for (objectStart, objectEnd) in zip(boundaries, boundaries.dropFirst()) where !inHole(objectStart) {
      while cursor < records.count && records[cursor].timestampMilliseconds < objectStart { cursor += 1 }
      var contents: [SegmentRecord] = []
      while cursor < records.count && records[cursor].timestampMilliseconds < objectEnd {
        contents.append(records[cursor])
        cursor += 1
      }
      let key: [UInt8]? = o.encrypt ? (0..<16).map { _ in UInt8.random(in: 0...255) } : nil
      let object = try SegmentWriter.object(
        records: contents, range: MediaRange(startMilliseconds: objectStart, endMilliseconds: objectEnd), key: key)
      let id = String(objectStart)
      let file = objects.appendingPathComponent("\(id).tseg")
      do {
        try object.write(to: file)
      } catch {
        throw TiError(.fileWriteFailed, "cannot write \(file.path): \(error.localizedDescription)")
      }
      var tracks: [RecordingIndex.Segment.Track] = []
      for track in [videoTrack, audioTrack] {
        if let codec = contents.first(where: { $0.track == track })?.codec {
          tracks.append(.init(kind: track.kind.description, channelId: Int(track.channel), codec: codec.description))
        }
      }
      segments.append(
        RecordingIndex.Segment(
          id: id, startMs: objectStart, endMs: objectEnd, url: "objects/\(id).tseg", size: object.count,
          sha256: SHA256Digest.hexHash(object), key: key.map { Hex.encode($0) }, tracks: tracks))
    }
    let index = RecordingIndex(deviceId: o.deviceId, segments: segments)
    do {
      try index.encoded().write(to: directory.appendingPathComponent("index.json"))
    } catch {
      throw TiError(.fileWriteFailed, "cannot write the index: \(error.localizedDescription)")
    }
    return Summary(index: index, videoFrames: videoFrames, audioRecords: audioRecords)
  }
}
