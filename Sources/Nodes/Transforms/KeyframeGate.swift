import PipelineGraph

/// Lets one track's packets through from its first independently decodable packet at or after a time:
/// an output that joins a running replay starts at the next keyframe and never gets earlier media
/// (audio packets each decode alone). Packets of other tracks and every event pass unchanged.
///
/// States: closed → open (at the first packet that qualifies); a flush closes it again, and after a
/// seek's flush (`NodeContext/seekTarget`) it opens at the track's first keyframe, whatever its time:
/// the seek starts every branch afresh from the keyframe at or before the target. Confined to its
/// pipeline's executor.
public final class KeyframeGate: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits the packets let through.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The gated track.
  public let track: TrackID
  /// Nothing of the track earlier than this passes.
  public let opensAt: MediaTime
  /// Nothing earlier passes in the current flush generation (nil after a seek).
  private var threshold: MediaTime?
  private var open = false

  /// A gate on `track` that opens at its first keyframe not earlier than `opensAt`.
  public init(name: String = "KeyframeGate", track: TrackID, opensAt: MediaTime) {
    self.name = name
    self.track = track
    self.opensAt = opensAt
    threshold = opensAt
  }

  /// Drops the track's packets until the gate opens.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track, !open else { return context.emit(input) }
    guard threshold.map({ input.time >= $0 }) ?? true, input.isKeyframe || input.track.kind == .audio else { return }
    open = true
    context.emit(input)
  }

  /// A flush closes the gate again; a seek's opens it at the next keyframe.
  public func flush(context: NodeContext<EncodedPacket>) {
    open = false
    threshold = context.seekTarget == nil ? opensAt : nil
  }
}
