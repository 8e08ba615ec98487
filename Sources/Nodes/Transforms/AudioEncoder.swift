import Foundation
import PipelineGraph

/// Encodes decoded audio into AAC-LC (libavcodec's AAC encoder): the audio encoder other flows compose —
/// a recorder of decoded media, a mix of several sources, sound a node of one's own made.
///
/// Input of any sample format, rate and channel count is converted first (libswresample): mono stays
/// mono, stereo stays stereo, more channels are mixed down to stereo; a rate ADTS cannot carry becomes
/// 48 kHz. Packets leave in ADTS (as the segment format's AAC), 1024 samples each, timed from the first
/// sample of the stretch; a `formatChange` announces the AAC format before the first packet.
///
/// Audio is placed by its timestamps: a hole of up to ``maximumSilence`` between frames is filled with
/// silence; a longer one, a `gap` or a change of the input's layout ends the stretch (its last frame
/// padded with silence) and the next frame starts a new one at its own time; a frame that starts more
/// than ``jitter`` before the stretch's end (time going back) is dropped. The encoder's priming frame
/// (before the stretch's first sample) is not emitted: every packet starts at or after the first frame.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush drops the open stretch.
public final class AudioEncoder: Node {
  /// Consumes decoded audio.
  public typealias Input = DecodedFrame
  /// Emits AAC in ADTS.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The track of the packets it emits.
  public let track: TrackID
  /// The bit rate, bits per second (nil: 64 kb/s per channel).
  public let bitRate: Int?
  /// The longest hole between frames filled with silence.
  public static let maximumSilence = MediaDuration.microseconds(1_000_000)
  /// How far a frame may start from where the previous one ended and still count as continuous.
  public static let jitter = MediaDuration.microseconds(2_000)
  private var stretch: (encoder: AACFrameEncoder, anchor: MediaTime, layout: Layout)?
  private var announced: TrackFormat?
  private var started = false
  /// Frames dropped because they went back in time.
  public private(set) var droppedFrames = 0

  private struct Layout: Equatable {
    var sampleRate: Int
    var channels: Int
  }

  /// Where the first stretch starts when the first frame comes up to ``maximumLead`` after it (the time
  /// before is silence: a recording whose picture starts first has sound from its start, and its sound
  /// in step with it).
  public let origin: MediaTime?
  /// The longest silence put before the first frame, from ``origin`` (a first frame later than that
  /// starts the sound at its own time).
  public let maximumLead: MediaDuration

  /// An encoder emitting packets of `track`, its first stretch from `origin` when the first frame comes
  /// at most `maximumLead` after it (``maximumSilence`` unless said).
  public init(
    name: String = "AudioEncoder", track: TrackID, bitRate: Int? = nil, origin: MediaTime? = nil,
    maximumLead: MediaDuration = AudioEncoder.maximumSilence
  ) {
    self.name = name
    self.track = track
    self.bitRate = bitRate
    self.origin = origin
    self.maximumLead = maximumLead
  }

  /// Encodes one frame (pictures are ignored).
  public func process(_ input: DecodedFrame, context: NodeContext<EncodedPacket>) throws {
    let layout = Layout(sampleRate: input.frame.sampleRate, channels: input.frame.channelCount)
    guard input.frame.sampleCount > 0, layout.sampleRate > 0, layout.channels > 0 else { return }
    if let open = stretch {
      let expected = try open.anchor + (try duration(of: open.encoder.samplesIn, open.encoder))
      let hole = try input.time - expected
      if open.layout != Self.outputLayout(layout) || hole > Self.maximumSilence {
        try end(context: context)
      } else if hole.microseconds < -Self.jitter.microseconds {
        droppedFrames += 1
        return
      } else if hole > Self.jitter {
        try open.encoder.putSilence(Int(hole.microseconds * Int64(open.encoder.output.sampleRate) / 1_000_000))
      }
    }
    if stretch == nil {
      let encoder = try AACFrameEncoder(sampleRate: layout.sampleRate, channels: layout.channels, bitRate: bitRate)
      var anchor = input.time
      if let origin, !started, origin < input.time, let lead = try? input.time - origin, lead <= maximumLead {
        anchor = origin
        try encoder.putSilence(Int(lead.microseconds * Int64(encoder.output.sampleRate) / 1_000_000))
      }
      started = true
      stretch = (encoder, anchor, Self.outputLayout(layout))
      if announced != encoder.output {
        announced = encoder.output
        context.send(.formatChange(FormatChange(track: track, format: encoder.output, time: input.time)))
      }
    }
    guard let open = stretch else { return }
    try open.encoder.put(input.frame)
    try emit(try open.encoder.encodeFullFrames(), context: context)
  }

  /// The layout the encoder makes of input in `layout`.
  private static func outputLayout(_ layout: Layout) -> Layout {
    Layout(sampleRate: AACFrameEncoder.outputRate(for: layout.sampleRate), channels: min(layout.channels, 2))
  }

  private func duration(of samples: Int64, _ encoder: AACFrameEncoder) throws -> MediaDuration {
    try MediaDuration(
      ticks: samples, timeBase: TimeBase(numerator: 1, denominator: Int32(encoder.output.sampleRate))!)
  }

  private func emit(_ frames: [(position: Int64, data: Data)], context: NodeContext<EncodedPacket>) throws {
    guard let open = stretch else { return }
    let format = open.encoder.output
    for (position, raw) in frames where position >= 0 {
      guard
        let header = ADTSHeader.make(sampleRate: format.sampleRate, channels: format.channels, payloadLength: raw.count)
      else { continue }
      // Time and end both from the sample count, rounded alike: a frame ends exactly where the next one
      // starts (1024 samples at 44.1 kHz are 23,219.95 µs: a rounded duration made frames overlap by a
      // microsecond, and a writer that keeps time from going back dropped one every half second).
      let start = try duration(of: position, open.encoder)
      let end = try duration(of: position + Int64(open.encoder.frameSamples), open.encoder)
      context.emit(
        EncodedPacket(
          track: track, format: format, time: try open.anchor + start, duration: try end - start, isKeyframe: true,
          data: header + raw))
    }
  }

  private func end(context: NodeContext<EncodedPacket>) throws {
    guard let open = stretch else { return }
    let drained = try open.encoder.drain()
    try emit(drained, context: context)
    stretch = nil
  }

  /// A gap ends the stretch; events pass on.
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .gap = try MediaEvent(event) { try end(context: context) }
    context.send(event)
  }

  /// Emits what the encoder still holds.
  public func finish(context: NodeContext<EncodedPacket>) throws { try end(context: context) }

  /// Drops the open stretch (a seek).
  public func flush(context: NodeContext<EncodedPacket>) {
    stretch = nil
    started = false
  }
}
