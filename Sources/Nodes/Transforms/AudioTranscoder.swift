import Foundation
import PipelineGraph

/// Transcodes G.711 audio to AAC-LC (MP4 does not carry G.711); other packets pass through unchanged.
///
/// G.711 is decoded (libavcodec), converted to the AAC encoder's planar float (libswresample), gathered
/// into 1024-sample frames and encoded with libavcodec's AAC encoder; each frame leaves in ADTS like the
/// segment format's AAC, timed from the first sample of the stretch.
///
/// Audio is placed by its timestamps: a hole of up to ``maximumSilence`` between records is filled with
/// silence; a longer one (or records that go back in time), a `gap`, a format change or a packet of
/// another codec on the track ends the stretch
/// (its last frame padded with silence) and the next record starts a new one at its own time. A record
/// that cannot be decoded (a payload that is not a whole number of samples, bytes libavcodec refuses)
/// becomes a `gap` event of the audio track over that record's stretch, reason `mediaUnreadable`, and
/// the stream goes on; an empty record holds no samples and is skipped.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush drops the open stretches.
public final class AudioTranscoder: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits packets, G.711 replaced by AAC.
  public typealias Output = EncodedPacket

  /// One stretch of one track: the codec chain and where its first sample lies.
  private final class Stretch {
    let track: TrackID
    let codec: G711Transcoder
    let anchor: MediaTime
    /// True when the stretch starts with the stream or after a gap, not after a hole the node itself cut.
    let keepsPriming: Bool
    let sampleTime: TimeBase

    init(track: TrackID, input: TrackFormat, anchor: MediaTime, keepsPriming: Bool) throws {
      self.track = track
      codec = try G711Transcoder(input: input)
      self.anchor = anchor
      self.keepsPriming = keepsPriming
      sampleTime = TimeBase(numerator: 1, denominator: Int32(clamping: max(1, input.sampleRate)))!
    }

    /// Where the next record should start if the audio is continuous.
    var expectedTime: MediaTime {
      get throws { try anchor + (try MediaDuration(ticks: codec.samplesIn, timeBase: sampleTime)) }
    }
  }

  /// The node's name.
  public let name = "AudioTranscoder"
  /// The longest hole between records filled with silence; a longer one starts a new stretch.
  public static let maximumSilence = MediaDuration.microseconds(1_000_000)
  /// Records whose start differs from the continuous position by at most this much are continuous
  /// (record times are whole milliseconds).
  static let jitter = MediaDuration.microseconds(2_000)
  private var stretches: [TrackID: Stretch] = [:]
  /// Tracks whose stretch a packet of another codec ended: the next one starts after a cut of this
  /// node's, so it drops its priming frame (it would lie over the other codec's packets).
  private var switched: Set<TrackID> = []

  /// Creates a transcoder.
  public init() throws {}

  /// Transcodes G.711; passes everything else.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.format.codec == .g711a || input.format.codec == .g711u else {
      // Sound of the track in another codec ends its stretch first: what the encoder holds leaves before
      // it, in the track's order (a writer that follows the first format must see where the second starts).
      if let stretch = stretches[input.track] {
        try end(stretch, context: context)
        switched.insert(input.track)
      }
      return context.emit(input)
    }
    guard !input.data.isEmpty else { return }
    let channels = max(1, input.format.channels)
    guard input.data.count % channels == 0 else {
      return badRecord(
        input, "\(input.data.count) bytes are not a whole number of \(channels)-channel samples", context)
    }
    var restarted = false
    if let stretch = stretches[input.track] {
      let hole = try input.time - (try stretch.expectedTime)
      if stretch.codec.input != input.format || hole.microseconds < -Self.jitter.microseconds
        || hole > Self.maximumSilence
      {
        try end(stretch, context: context)
        restarted = true
      } else if hole > Self.jitter {
        try stretch.codec.queueSilence(Int(try hole.ticks(in: stretch.sampleTime)))
      }
    }
    let stretch: Stretch
    if let existing = stretches[input.track] {
      stretch = existing
    } else {
      let cut = restarted || switched.remove(input.track) != nil
      stretch = try Stretch(track: input.track, input: input.format, anchor: input.time, keepsPriming: !cut)
      stretches[input.track] = stretch
      context.send(.formatChange(FormatChange(track: input.track, format: stretch.codec.output, time: input.time)))
    }
    do {
      try stretch.codec.decode(input.data)
    } catch let error as MediaError {
      // The decoder may be in any state now: end the stretch with what it had, and start afresh.
      try end(stretch, context: context)
      return badRecord(input, error.message, context)
    }
    try emit(try stretch.codec.encodeFullFrames(), of: stretch, context)
  }

  private func badRecord(_ input: EncodedPacket, _ why: String, _ context: NodeContext<EncodedPacket>) {
    let samples = Int64(input.data.count / max(1, input.format.channels))
    let duration = MediaDuration.microseconds(max(1000, samples * 1_000_000 / Int64(max(1, input.format.sampleRate))))
    context.send(
      .gap(
        RecordingGap(
          range: MediaRange(
            start: input.time, end: input.time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))),
          tracks: [input.track], reasons: [.mediaUnreadable])))
  }

  /// Sends AAC frames in ADTS, timed from the stretch's first sample.
  private func emit(
    _ frames: [(position: Int64, data: Data)], of stretch: Stretch, _ context: NodeContext<EncodedPacket>
  ) throws {
    let format = stretch.codec.output
    for (position, raw) in frames {
      // The encoder's priming frame lies before the stretch's first sample. At the start of a stretch it
      // leaves with it (a writer can hide it with an edit list, so the first samples decode without a
      // fade-in); after a hole inside a stretch it would sit in the hole and is dropped.
      guard position >= 0 || stretch.keepsPriming else { continue }
      guard
        let header = ADTSHeader.make(sampleRate: format.sampleRate, channels: format.channels, payloadLength: raw.count)
      else { continue }
      context.emit(
        EncodedPacket(
          track: stretch.track, format: format,
          time: try stretch.anchor + (try MediaDuration(ticks: position, timeBase: stretch.sampleTime)),
          duration: try MediaDuration(ticks: 1024, timeBase: stretch.sampleTime), isKeyframe: true, data: header + raw))
    }
  }

  /// Ends a stretch: its last frame padded with silence, what the encoder holds sent.
  private func end(_ stretch: Stretch, context: NodeContext<EncodedPacket>) throws {
    stretches[stretch.track] = nil
    try emit(try stretch.codec.drain(), of: stretch, context)
  }

  /// A gap ends the stretch: the encoders restart with the next packet.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    switch try MediaEvent(event) {
    case .gap:
      try endAll(context: context)
      switched.removeAll()
    case .formatChange(let change) where change.format.codec == .g711a || change.format.codec == .g711u:
      return  // replaced by the AAC format announced with the first transcoded packet
    default:
      break
    }
    context.send(event)
  }

  private func endAll(context: NodeContext<EncodedPacket>) throws {
    for stretch in stretches.values.sorted(by: { $0.track.description < $1.track.description }) {
      try end(stretch, context: context)
    }
  }

  /// Emits what the encoders still hold.
  public func finish(context: NodeContext<EncodedPacket>) throws { try endAll(context: context) }

  /// Drops the stretches (a seek).
  public func flush(context: NodeContext<EncodedPacket>) {
    stretches.removeAll()
    switched.removeAll()
  }
}
