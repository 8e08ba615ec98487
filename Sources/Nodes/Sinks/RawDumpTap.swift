import PipelineGraph

/// The replay graph's tap for raw dumps: hands every packet the demuxer reads, of any channel, to the
/// dumps the replay holds now (a dump comes and goes while the graph runs).
///
/// Stateless; confined to its pipeline's executor, where `dumps` is called once per packet.
public final class RawDumpTap: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink (it watches a fan-out).
  public typealias Output = Never

  /// The node's name.
  public let name = "RawDumpTap"
  private let dumps: @Sendable () -> [RawDumpWriter]

  /// A tap that hands media to `dumps()`, read at each packet.
  public init(dumps: @escaping @Sendable () -> [RawDumpWriter]) {
    self.dumps = dumps
  }

  /// Hands the packet on.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    for dump in dumps() { dump.take(input) }
  }
}
