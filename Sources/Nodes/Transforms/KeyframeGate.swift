import PipelineGraph

/// Lets one track's packets through from its first independently decodable packet at or after a time:
/// an output that joins a running replay starts at the next keyframe and never gets earlier media
/// (audio packets each decode alone). Packets of other tracks and every event pass unchanged.
///
/// States: closed → open (at the first packet that qualifies); a flush closes it again. Confined to its
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
  private var open = false

  /// A gate on `track` that opens at its first keyframe not earlier than `opensAt`.
  public init(name: String = "KeyframeGate", track: TrackID, opensAt: MediaTime) {
    self.name = name
    self.track = track
    self.opensAt = opensAt
  }

  /// Drops the track's packets until the gate opens.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard input.track == track, !open else { return context.emit(input) }
    guard input.time >= opensAt, input.isKeyframe || input.track.kind == .audio else { return }
    open = true
    context.emit(input)
  }

  /// A flush (seek) closes the gate again.
  public func flush(context: NodeContext<EncodedPacket>) { open = false }
}
