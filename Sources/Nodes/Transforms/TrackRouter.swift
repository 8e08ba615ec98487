import PipelineGraph

/// Passes the packets of the selected tracks (kind + channel id) and every event; drops the rest.
/// One router per branch: the video decoder's branch selects the video channel, and so on.
///
/// Confined to its pipeline's executor: the tracks it lets through change there (``select(_:)``) when an
/// output joins or leaves a running graph.
public final class TrackRouter: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits the selected packets.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// The tracks let through.
  public private(set) var tracks: Set<TrackID>

  /// Creates a router for `tracks`.
  public init(name: String = "TrackRouter", tracks: Set<TrackID>) {
    self.name = name
    self.tracks = tracks
  }

  /// Lets `tracks` through from the next packet on (on the pipeline's executor).
  public func select(_ tracks: Set<TrackID>) { self.tracks = tracks }

  /// Passes the packet when its track is selected.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    if tracks.contains(input.track) { context.emit(input) }
  }
}
