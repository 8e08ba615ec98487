import Foundation
import PipelineGraph

/// Decodes one track's packets with libavcodec (H.264, H.265, AAC, G.711) into ``DecodedFrame``s.
///
/// The decoder opens at the track's first packet and reopens at a `formatChange` to another format; a
/// `gap` or the same format announced again (after the frames it still holds are emitted), or a flush,
/// resets it (decoding restarts at the keyframe the demuxer guarantees; the open codec is kept). `keyframesOnly` skips every
/// non-keyframe (trick play, a benchmark of keyframe decoding).
///
/// Its consumer says how much it can use with a `QualityOfService` event sent upstream (its ``Pacer``):
/// `essentialOnly` decodes keyframes only until `everything` comes (a sink falling behind at a fast
/// speed); `nothing` decodes nothing (muted audio off 1×) but keeps the packets of the latest
/// ``retainedWhileDiscarding`` of media, which are decoded first when decoding resumes (at the next
/// packet, or at the end of stream): what the graph read ahead while muted is not lost, and the pacer
/// drops what is already past. The decoder does what was asked itself and forwards nothing further; with
/// several consumers, the last to ask decides (a graph where one falls behind and another does not puts a
/// decoder on each branch). A
/// packet libavcodec rejects is a failure of this node with `unreadableMedia`/`mediaUnreadable`.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; so is ``framesDecoded``.
public final class FrameDecoder: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits frames.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// The track decoded; packets of other tracks are ignored.
  public let track: TrackID
  /// Decoding threads (libavcodec's `thread_count`).
  public let threads: Int
  /// The decoding threads of a decoder made without saying: one per core, as `ffmpeg` and GStreamer's
  /// `avdec_*` decode by default, and what `tipipe bench decode` measures. libavcodec's frame threads
  /// hold back one frame per thread; a flow that wants each frame as soon as its packet arrives (a
  /// replay's first picture after a seek) asks for 1.
  public static let defaultThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
  /// Decode keyframes only, whatever the consumer asks.
  public let keyframesOnly: Bool
  /// What the consumer last asked for (`QualityOfService`): until it asks, everything.
  private var demand = QualityOfService.Demand.everything
  /// Decode nothing: packets are kept (the latest ``retainedWhileDiscarding`` of media), and decoding
  /// starts afresh with them (at a keyframe) when this ends.
  private var discardsAll: Bool { demand == .nothing }
  /// How much media is kept while the consumer asks for nothing (older packets go): more than the graph
  /// reads ahead of the position at any speed and frame rate.
  public static let retainedWhileDiscarding = MediaDuration.microseconds(30_000_000)
  /// The most packets kept, whatever their times say.
  static let retainedPacketLimit = 8192

  private var retained: [EncodedPacket] = []

  private var decoder: MediaDecoder?
  /// Frames decoded so far.
  public private(set) var framesDecoded = 0
  private var skipping = false
  /// The time of the track's last packet taken (nil before the first, and after a flush).
  private var lastTaken: MediaTime?

  /// True when `failure` is one of `decoders` refusing a damaged packet (`unreadableMedia`). A flow that
  /// decodes as ffmpeg does answers it with `ErrorDisposition.resume`: the packet costs its own frames,
  /// the decoder goes on with the next one.
  public static func isDamagedPacket(_ failure: NodeFailure, from decoders: Set<ObjectIdentifier>) -> Bool {
    decoders.contains(failure.nodeID) && (failure.error as? MediaError)?.kind == .unreadableMedia
  }

  /// Creates a decoder for `track` with `threads` decoding threads (``defaultThreads`` unless said).
  public init(
    name: String = "FrameDecoder", track: TrackID, threads: Int = FrameDecoder.defaultThreads,
    keyframesOnly: Bool = false
  ) throws {
    self.name = name
    self.track = track
    self.threads = max(1, threads)
    self.keyframesOnly = keyframesOnly
  }

  /// Decodes one packet and emits the frames it completes.
  public func process(_ input: EncodedPacket, context: NodeContext<DecodedFrame>) throws {
    guard input.track == track else { return }
    lastTaken = input.time
    guard !discardsAll else {
      // What the decoder holds would refer to packets it never gets: it reopens when decoding resumes.
      decoder = nil
      skipping = true
      retained.append(input)
      let oldest = (try? input.time - Self.retainedWhileDiscarding) ?? MediaTime(microseconds: .min)
      let old = retained.prefix { $0.time < oldest }.count
      let excess = max(old, retained.count - Self.retainedPacketLimit)
      // Amortized: trimmed once a tenth of the limit is due.
      if excess > Self.retainedPacketLimit / 10 || retained.count > Self.retainedPacketLimit {
        retained.removeFirst(excess)
      }
      return
    }
    var failures = FirstFailure()
    failures.run { try decodeRetained(context: context) }
    failures.run { try decode(input, context: context) }
    try failures.rethrow()
  }

  /// Decodes what was kept while discarding, the part within ``retainedWhileDiscarding`` of the newest:
  /// each packet, whatever one of them costs (the first failure is thrown after the last).
  private func decodeRetained(context: NodeContext<DecodedFrame>) throws {
    guard let newest = retained.last else { return }
    let oldest = (try? newest.time - Self.retainedWhileDiscarding) ?? MediaTime(microseconds: .min)
    let waiting = retained.drop { $0.time < oldest }
    retained = []
    var failures = FirstFailure()
    for packet in waiting { failures.run { try decode(packet, context: context) } }
    try failures.rethrow()
  }

  private func decode(_ input: EncodedPacket, context: NodeContext<DecodedFrame>) throws {
    // A frame after a skipped one may refer to it: once frames are skipped, decoding resumes only at a
    // keyframe (also when keyframes-only mode ends).
    guard input.isKeyframe || (!keyframesOnly && demand != .essentialOnly && !skipping) else {
      skipping = true
      return
    }
    skipping = false
    let open = decoder?.format
    var failures = FirstFailure()
    if open?.codec != input.format.codec || open?.sampleRate != input.format.sampleRate
      || open?.channels != input.format.channels
    {
      // The old format's last frames; a damaged one among them does not cost the new format's keyframe.
      failures.run { try drain(context: context) }
      decoder = try MediaDecoder(format: input.format, threads: threads)
    }
    if let decoder {
      failures.run {
        try decoder.send(input)
        try decoder.receive { emit($0, $1, $2, context) }
      }
    }
    try failures.rethrow()
  }

  private func emit(
    _ time: MediaTime, _ duration: MediaDuration, _ frame: FrameBuffer, _ context: NodeContext<DecodedFrame>
  ) {
    framesDecoded += 1
    context.emit(DecodedFrame(track: track, time: time, duration: duration, frame: frame))
  }

  /// The most failures a drain reads past: libavcodec reports each failing frame once, so a drain ends
  /// long before; the bound keeps a codec that repeats its failure from holding the node.
  private static let drainFailureLimit = 64

  /// Emits what the decoder holds, every frame but a damaged one (the first failure is thrown after the
  /// last frame); the decoder is closed, or kept `resetting` for what follows a gap.
  private func drain(context: NodeContext<DecodedFrame>, resetting: Bool = false) throws {
    guard let decoder else { return }
    self.decoder = nil
    decoder.sendEndOfStream()
    var failures = FirstFailure()
    for _ in 0..<Self.drainFailureLimit {
      guard failures.run({ try decoder.receive { emit($0, $1, $2, context) } }) else { continue }
      break
    }
    if resetting {
      decoder.reset()
      self.decoder = decoder
    }
    try failures.rethrow()
  }

  /// A format change of the track reopens the decoder at its next packet; a gap resets it.
  public func handle(_ event: PipelineEvent, context: NodeContext<DecodedFrame>) throws {
    let media = try MediaEvent(event)
    // After the frames drained, even when one of them failed: a gap or a format change is never lost.
    defer { context.send(event) }
    switch media {
    case .formatChange(let change) where change.track == track:
      // The same format announced again (after a seek the demuxer announces what it reads) keeps the open
      // codec, from the next keyframe; another format reopens it.
      try drain(context: context, resetting: change.format == decoder?.format)
    case .gap(let gap) where gap.concerns(track) && lastTaken.map({ $0 < gap.range.end }) ?? true:
      // Only this track's gaps: an audio gap between a keyframe and the frames that refer to it must not
      // reset the video decoder. Nor does a gap that ended before the last packet taken (one found late,
      // among what passed before a branch joined): the packets after it decode on.
      try drain(context: context, resetting: true)
    default:
      break
    }
  }

  /// Takes its consumer's demand (see the type's documentation); other upstream events go on.
  public func handleUpstream(_ event: UpstreamEvent, context: NodeContext<DecodedFrame>) {
    guard case .qualityOfService(let quality) = event else { return context.sendUpstream(event) }
    demand = quality.demand
  }

  /// Emits the frames still inside the decoder.
  public func finish(context: NodeContext<DecodedFrame>) throws {
    var failures = FirstFailure()
    if !discardsAll { failures.run { try decodeRetained(context: context) } }
    failures.run { try drain(context: context) }
    try failures.rethrow()
  }

  /// Drops the decoder's state (a seek). Keyframes-only ends here, as `QualityOfService` says of a flush;
  /// a demand for nothing holds.
  public func flush(context: NodeContext<DecodedFrame>) {
    if demand == .essentialOnly { demand = .everything }
    decoder?.reset()
    skipping = false
    retained = []
    lastTaken = nil
  }
}
