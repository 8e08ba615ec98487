import Foundation
import PipelineGraph

/// Turns parsed objects into ``EncodedPacket``s with their ``TrackFormat``s (`spec/segment-format.md`).
///
/// - Decoding state carries across objects: an object boundary is never a gap by itself.
/// - Decoding restarts at the first data of the stream and after every `gap` from upstream (a lost or
///   unusable object, a hole): a video track's frames before its next keyframe cannot be decoded, so they
///   are dropped and reported as one `gap` with reason `noKeyFrame` over the stretch they covered.
/// - A change of a track's parameters (codec, size, parameter sets, audio rate or channels) is announced
///   by a `formatChange` event just before the first packet in the new format.
/// - With `endingAt`, packets at or after that instant are dropped (a frame before it still gets its
///   duration from the next one).
/// - With `startingAt`, output begins at the last keyframe at or before that instant (or the first one
///   after it): earlier packets are dropped.
/// - Video packet durations come from the next frame's time (one frame of look-ahead per track).
/// - Objects may overlap, or be listed twice (`spec/segment-format.md`, "The index"), and a record may
///   be repeated: a video frame not after the last one taken, or an audio frame that starts more than a
///   millisecond before the end of the last one taken, was already covered and is dropped, so media is
///   never emitted twice and a track's times never go back.
///
/// It is a `SteppingNode`: an object's records are demuxed one at a time as the output has room, so
/// the edge after it stays within its bounds however many packets an object holds.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush forgets all decoding state (a
/// seek's target, `NodeContext/seekTarget`, becomes the new `startingAt`).
public final class SegmentDemuxer: SteppingNode {
  /// Consumes parsed objects.
  public typealias Input = SegmentObject
  /// Emits packets.
  public typealias Output = EncodedPacket

  private struct TrackState {
    var format: TrackFormat?
    var decodable = false
    var droppedFrom: MediaTime?
    var pending: EncodedPacket?
    var lastDuration = MediaDuration.microseconds(40_000)
    /// How far this track's accepted records reach: the last video frame's time, the end of the last
    /// audio frame.
    var reach: MediaTime?
  }

  private enum Held {
    case packet(EncodedPacket)
    case event(PipelineEvent)
  }

  /// The node's name.
  public let name = "SegmentDemuxer"
  /// The longest a video frame is taken to last (10 s).
  public static let maximumFrameDuration = MediaDuration.microseconds(10_000_000)
  /// While the output waits for the first video frame of the range, audio older than this before the
  /// newest one held is dropped, so a range without video holds at most this much audio (10 s).
  static let maximumHeldAudio = MediaDuration.microseconds(10_000_000)
  private var startingAt: MediaTime?
  private let requestedStart: MediaTime?
  private let endingAt: MediaTime?
  private var trimBefore: MediaTime?
  private var held: [Held] = []
  private var tracks: [TrackID: TrackState] = [:]
  private var probes: [Codec: VideoParameterProbe] = [:]
  private var lastObjectEnd: MediaTime?
  /// The records of the object being demuxed (kept apart from the object: a step copies none of it),
  /// the next one, and where the object ends (nil: no object being demuxed).
  private var records: [SegmentRecord] = []
  private var nextRecord = 0
  private var objectEnd: MediaTime?
  /// What is ready to leave, oldest first from `readyHead`.
  private var ready: [Held] = []
  private var readyHead = 0

  /// Creates a demuxer; `startingAt` trims the output to begin at the keyframe at or before it,
  /// `endingAt` to end before it.
  public init(startingAt: MediaTime? = nil, endingAt: MediaTime? = nil) {
    self.startingAt = startingAt
    requestedStart = startingAt
    self.endingAt = endingAt
    trimBefore = startingAt
  }

  /// Takes one object; its records are demuxed by ``step(context:)``.
  public func process(_ input: SegmentObject, context: NodeContext<EncodedPacket>) throws {
    let range = input.parsed.header.range
    ready.append(.event(.rangeStart(range)))
    records = input.parsed.records
    nextRecord = 0
    objectEnd = range.end
  }

  /// True while packets or records of the last object are left.
  public var hasPendingWork: Bool { readyHead < ready.count || objectEnd != nil }

  /// Sends the next packet or event that is ready, demuxing records until one is.
  public func step(context: NodeContext<EncodedPacket>) throws {
    while readyHead == ready.count, let end = objectEnd {
      if nextRecord == records.count {
        lastObjectEnd = end
        objectEnd = nil
        records = []
        break
      }
      nextRecord += 1
      let record = records[nextRecord - 1]
      // The track's state is changed in place (a copy would retain what it holds, each record).
      try demux(record, state: &tracks[record.track, default: TrackState()], context: context)
    }
    guard readyHead < ready.count else { return }
    let entry = ready[readyHead]
    readyHead += 1
    if readyHead == ready.count {
      ready.removeAll(keepingCapacity: true)
      readyHead = 0
    }
    switch entry {
    case .packet(let packet): context.emit(packet)
    case .event(let event): context.send(event)
    }
  }

  private func demux(
    _ record: SegmentRecord, state: inout TrackState, context: NodeContext<EncodedPacket>
  ) throws {
    // A record without a byte holds no media (a G.711 record of no samples): skipped, as if absent — an
    // empty packet would tell a decoder that its stream ended, and lose the rest of the track.
    guard !record.payload.isEmpty else { return }
    let time = MediaTime(milliseconds: record.timestampMilliseconds)
    switch record.track.kind {
    case .video:
      // Two frames cannot be shown at one instant: a frame not after the last one taken (a repeated
      // record, an overlapping object) is dropped.
      if let reach = state.reach, time <= reach { return }
    case .audio:
      // Likewise audio that starts more than a millisecond (record times are whole milliseconds) before
      // the end of the last frame taken.
      if let reach = state.reach, try time < reach - .microseconds(1000) { return }
    }
    switch record.track.kind {
    case .video:
      // A keyframe whose parameter sets do not give a picture size cannot start decoding (nor declare a
      // track in a file): it counts as an ordinary frame.
      var keyframeFormat: TrackFormat?
      if record.isKeyframe {
        let probed = try probe(record.codec).format(ofKeyframe: record.payload)
        if probed.width > 0 && probed.height > 0 { keyframeFormat = probed }
      }
      let isKeyframe = keyframeFormat != nil
      if !state.decodable {
        guard isKeyframe else {
          if state.droppedFrom == nil { state.droppedFrom = time }
          return
        }
        if let from = state.droppedFrom {
          output(
            .event(
              .gap(
                RecordingGap(range: MediaRange(start: from, end: time), tracks: [record.track], reasons: [.noKeyFrame]))
            ), context)
          state.droppedFrom = nil
        }
        state.decodable = true
      }
      let format = keyframeFormat ?? state.format ?? TrackFormat(codec: record.codec)
      if let pending = state.pending {
        let duration = try time - pending.time
        // A frame lasts until the next one, but not for ever: a stretch of minutes without a frame
        // (or times from a broken clock) is a stretch without video, not one frozen picture.
        let plausible = duration > .zero && duration <= Self.maximumFrameDuration
        if plausible { state.lastDuration = duration }
        output(.packet(pending.withDuration(plausible ? duration : state.lastDuration)), context)
        state.pending = nil
      }
      if format != state.format {
        output(.event(.formatChange(FormatChange(track: record.track, format: format, time: time))), context)
        state.format = format
      }
      state.pending = EncodedPacket(
        track: record.track, format: format, time: time, duration: state.lastDuration,
        isKeyframe: isKeyframe, data: record.payload)
      state.reach = time
    case .audio:
      var format = TrackFormat(codec: record.codec, sampleRate: record.sampleRate, channels: record.channels)
      let samples: Int
      if record.codec == .aac {
        format.audioSpecificConfig = ADTSHeader(record.payload)?.audioSpecificConfig ?? Data()
        samples = 1024
      } else {
        samples = record.payload.count / max(1, record.channels)
      }
      if format != state.format {
        output(.event(.formatChange(FormatChange(track: record.track, format: format, time: time))), context)
        state.format = format
      }
      let duration = MediaDuration.microseconds(Int64(samples) * 1_000_000 / Int64(max(1, record.sampleRate)))
      state.reach = try time + duration
      output(
        .packet(
          EncodedPacket(
            track: record.track, format: format, time: time, duration: duration, isKeyframe: true,
            data: record.payload)), context)
    }
  }

  private func probe(_ codec: Codec) throws -> VideoParameterProbe {
    if let probe = probes[codec] { return probe }
    let probe = try VideoParameterProbe(codec: codec)
    probes[codec] = probe
    return probe
  }

  /// Sends a packet or event, through the start-of-range trimming while it lasts: until the first video
  /// frame at or after the range start (or a gap after the start), entries are held; each video keyframe
  /// before the start drops the packets held before it, and a gap at or before the start drops every
  /// packet held (decoding restarts after it). Output then begins at the last decodable keyframe at or
  /// before the start, or at the first frame after it.
  ///
  /// Only video ends the trimming: video leaves one frame late (its duration comes from the next frame),
  /// so audio at the start would otherwise release the frames of the GOP before the keyframe at the start.
  private func output(_ entry: Held, _ context: NodeContext<EncodedPacket>) {
    if let endingAt, case .packet(let packet) = entry, packet.time >= endingAt { return }
    guard let trimBefore else { return ready.append(entry) }
    switch entry {
    case .packet(let packet) where packet.track.kind == .video:
      if packet.time >= trimBefore {
        self.trimBefore = nil
        // A keyframe exactly at the start begins decoding by itself: media held from before it is not
        // needed (audio at its time or later, held because video leaves a frame late, is). A keyframe after
        // the start does not: the held GOP covers the start.
        if packet.isKeyframe && packet.time == trimBefore {
          held.removeAll { if case .packet(let earlier) = $0 { earlier.time < packet.time } else { false } }
          return endTrimming(with: entry, context)
        }
        // Held video that stops long before this frame does not reach the start: it is not the range's.
        let lastHeld = held.last { if case .packet(let p) = $0 { p.track.kind == .video } else { false } }
        if case .packet(let earlier) = lastHeld,
          (try? packet.time - earlier.time).map({ $0 > Self.maximumFrameDuration }) ?? true
        {
          held.removeAll { if case .packet = $0 { true } else { false } }
        }
        return endTrimming(with: entry, context)
      }
      if packet.isKeyframe {
        held.removeAll { item in
          switch item {
          case .packet(let earlier): return earlier.time < packet.time
          case .event(.gap(let gap as RecordingGap)): return gap.range.end <= trimBefore
          case .event: return false
          }
        }
      }
    case .packet(let packet):
      // Audio waiting for the first video frame: keep a bounded stretch (each packet holds its object).
      let oldest = (try? packet.time - Self.maximumHeldAudio) ?? MediaTime(microseconds: .min)
      held.removeAll { item in
        if case .packet(let earlier) = item, earlier.track.kind == .audio, earlier.time < oldest {
          return true
        }
        return false
      }
    case .event(.gap(let gap as RecordingGap)):
      if gap.range.start <= trimBefore {
        // Lost data at or before the start: what is held cannot lead into the range.
        held.removeAll { if case .packet = $0 { true } else { false } }
      } else {
        // Lost data after the start: what is held is the range's beginning, up to the gap.
        self.trimBefore = nil
        return endTrimming(with: entry, context)
      }
    default:
      break
    }
    held.append(entry)
  }

  /// Sends what was held, then `entry` (trimming is over: `trimBefore` is nil).
  private func endTrimming(with entry: Held, _ context: NodeContext<EncodedPacket>) {
    let released = held
    held = []
    for item in released { output(item, context) }
    output(entry, context)
  }

  /// Upstream lost data: flush what is held, forward the gap, and restart decoding at keyframes.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .gap = try MediaEvent(event) { restart(context: context) }
    output(.event(event), context)
  }

  private func restart(context: NodeContext<EncodedPacket>) {
    for (track, var state) in tracks {
      if var pending = state.pending {
        // The last frame before a hole or the end lasts as long as the one before it, unless its object
        // ends less than half a frame after that: then it lasts to the object's end (record times are
        // whole milliseconds: a 30 fps picture's 33 ms would leave a 1 ms sliver without video).
        if track.kind == .video, let end = lastObjectEnd, pending.time < end,
          let frameEnd = try? pending.time + pending.duration, frameEnd < end,
          let shortfall = try? end - frameEnd, shortfall.microseconds * 2 <= pending.duration.microseconds,
          let duration = try? end - pending.time
        {
          pending = pending.withDuration(duration)
        }
        output(.packet(pending), context)
      }
      state.pending = nil
      if let from = state.droppedFrom, let end = lastObjectEnd, end > from {
        output(
          .event(.gap(RecordingGap(range: MediaRange(start: from, end: end), tracks: [track], reasons: [.noKeyFrame]))),
          context)
      }
      state.droppedFrom = nil
      state.decodable = false
      tracks[track] = state
    }
  }

  /// Emits the held-back frames at the end of the stream.
  public func finish(context: NodeContext<EncodedPacket>) throws {
    restart(context: context)
    trimBefore = nil
    let released = held
    held = []
    for item in released { output(item, context) }
  }

  /// Forgets all decoding state (a seek).
  public func flush(context: NodeContext<EncodedPacket>) {
    tracks.removeAll()
    held.removeAll()
    records = []
    nextRecord = 0
    objectEnd = nil
    ready.removeAll()
    readyHead = 0
    startingAt = context.seekTarget ?? requestedStart
    trimBefore = startingAt
    lastObjectEnd = nil
  }
}

extension EncodedPacket {
  /// The same packet with another duration.
  func withDuration(_ duration: MediaDuration) -> EncodedPacket {
    EncodedPacket(
      track: track, format: format, time: time, decodeTime: decodeTime, duration: duration,
      isKeyframe: isKeyframe, data: data, isHidden: isHidden, hiddenSamples: hiddenSamples)
  }
}
