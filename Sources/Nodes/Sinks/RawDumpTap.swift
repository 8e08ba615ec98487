import PipelineGraph

/// The replay graph's tap for raw dumps: hands every packet the demuxer reads, of any channel, to the
/// dumps the replay holds now (a dump comes and goes while the graph runs).
///
/// Confined to its pipeline's executor. The dumps are a `Published` list: a packet costs an atomic
/// load, not a lock, unless the list changed.
public final class RawDumpTap: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink (it watches a fan-out).
  public typealias Output = Never

  /// The node's name.
  public let name = "RawDumpTap"
  private var dumps: Published<[RawDumpWriter]>.Reader

  /// A tap that hands media to the `dumps` published at each packet.
  public init(dumps: Published<[RawDumpWriter]>) {
    self.dumps = dumps.reader()
  }

  /// Hands the packet on.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    for dump in dumps.current { dump.take(input) }
  }
}
