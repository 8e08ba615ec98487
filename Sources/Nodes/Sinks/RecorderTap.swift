import PipelineGraph

/// The replay graph's tap for recorders: hands every packet to the recorders the replay holds now.
///
/// Confined to its pipeline's executor. The recorders are a `Published` list (tasks come and go while
/// the graph runs): a packet costs an atomic load, not a lock, unless the list changed. A seek's flush
/// is a discontinuity for every recorder (``ReplayRecorder/discontinuity()``), in order with the
/// packets: what was read before the seek and not played is dropped, and the next packets start a new
/// stretch.
public final class RecorderTap: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "RecorderTap"
  private var recorders: Published<[ReplayRecorder]>.Reader

  private let paced: Bool

  /// A tap that hands media to the `recorders` published at each packet; unless `paced` (no output
  /// presents, so nothing tells the position) what is read counts as played.
  public init(paced: Bool, recorders: Published<[ReplayRecorder]>) {
    self.paced = paced
    self.recorders = recorders.reader()
  }

  /// A seek: each recorder's stretch ends where the play left it.
  public func flush(context: NodeContext<Never>) {
    guard context.seekTarget != nil else { return }
    for recorder in recorders.current { recorder.discontinuity() }
  }

  /// Hands the packet on.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    for recorder in recorders.current {
      recorder.take(input)
      if !paced { recorder.advance(to: input.time) }
    }
  }
}
