import PipelineGraph

/// Hands a graph branch's decoded frames to a ``MediaTrack`` (a file's or a replay's pictures or sound
/// becoming a track that recorders and compositors take). When a subscriber's queue is full the branch
/// waits (its input suspended) until the track has room: a recorder slower than the decoder holds the
/// decoder back instead of losing frames. The end of stream ends the track.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class TrackFeed: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  /// The track fed.
  public let track: MediaTrack
  private var room: Completion<Void>?
  /// Whether the end of stream ends the track (false: the track goes on with another producer).
  public let endsTrack: Bool

  /// A feed of `track`.
  public init(name: String = "TrackFeed", track: MediaTrack, endsTrack: Bool = true) {
    self.name = name
    self.track = track
    self.endsTrack = endsTrack
  }

  /// Arms the wake-up the track calls when it has room.
  public func start(context: NodeContext<Never>) throws { arm(context) }

  /// Arms the wake-up again: one made before a flush would be dropped as stale, and a feed that waits
  /// for room after it would wait forever.
  public func flush(context: NodeContext<Never>) { arm(context) }

  private func arm(_ context: NodeContext<Never>) {
    room = context.makeCompletion { (_: Void) in context.resumeInput() }
  }

  /// Hands one frame on.
  public func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    guard !track.push(input), let room else { return }
    context.suspendInput()
    track.whenRoom { room(()) }
  }

  /// Ends the track.
  public func finish(context: NodeContext<Never>) throws {
    // The completion holds the partition that holds this node: let it go (no cycle outlives the graph).
    room = nil
    if endsTrack { track.end() }
  }

  /// Lets the wake-up go.
  public func stop(context: NodeContext<Never>) { room = nil }
}
