import PipelineGraph

/// The replay graph's tap for recorders: hands every packet to the recorders the replay holds now.
///
/// Confined to its pipeline's executor. The recorders are a `Published` list (tasks come and go while
/// the graph runs): a packet costs an atomic load, not a lock, unless the list changed. A seek's flush
/// is a discontinuity for every recorder (``ReplayRecorder/discontinuity()``), in order with the
/// packets: what was read before the seek and not played is dropped, and the next packets start a new
/// stretch.
///
/// It keeps what passed in the last ``historySpan`` of media (at most ``historyBytes``): the tap runs
/// ahead of what is presented by what waits before the decoders, so a recorder that starts while the
/// graph runs gets from it the packets at and after its start (``join(_:)``) instead of a graph built
/// again that reads them again.
public final class RecorderTap: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "RecorderTap"
  /// How much media the tap keeps for recorders that join (the newest packet's time back).
  public static let historySpan = MediaDuration.microseconds(4_000_000)
  /// The most bytes of packets it keeps for them.
  public static let historyBytes = 16 << 20
  private var recorders: Published<[ReplayRecorder]>.Reader

  private let paced: Bool
  /// The packets of the span kept, oldest first, from `historyStart` on.
  private var history: [EncodedPacket] = []
  private var historyStart = 0
  private var keptBytes = 0
  /// The latest time of a packet let go from the history since the graph started or flushed: a
  /// recorder starting at or before it cannot join.
  private var forgotten: MediaTime?

  /// A tap that hands media to the `recorders` published at each packet; unless `paced` (no output
  /// presents, so nothing tells the position) what is read counts as played.
  public init(paced: Bool, recorders: Published<[ReplayRecorder]>) {
    self.paced = paced
    self.recorders = recorders.reader()
  }

  /// Hands `recorder` what the tap kept from its ``ReplayRecorder/startsAt`` on, in order (on the
  /// pipeline's executor, before the next packet reaches the tap): true when that is all it missed;
  /// false, giving it nothing, when a packet it would record was let go already (the graph must then
  /// read from its start again).
  public func join(_ recorder: ReplayRecorder) -> Bool {
    if let forgotten, forgotten >= recorder.startsAt { return false }
    for packet in history[historyStart...] {
      recorder.take(packet)
      if !paced { recorder.advance(to: packet.time) }
    }
    return true
  }

  /// A seek: each recorder's stretch ends where the play left it.
  public func flush(context: NodeContext<Never>) {
    history = []
    historyStart = 0
    keptBytes = 0
    forgotten = nil
    guard context.seekTarget != nil else { return }
    for recorder in recorders.current { recorder.discontinuity() }
  }

  /// Hands the packet on.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    for recorder in recorders.current {
      recorder.take(input)
      if !paced { recorder.advance(to: input.time) }
    }
    keep(input)
  }

  /// Adds `packet` to the history and lets go of what is older than the span or over the bytes.
  private func keep(_ packet: EncodedPacket) {
    history.append(packet)
    keptBytes += packet.data.count
    let oldest = (try? packet.time - Self.historySpan) ?? packet.time
    while historyStart < history.count - 1,
      history[historyStart].time < oldest || keptBytes > Self.historyBytes
    {
      let gone = history[historyStart]
      keptBytes -= gone.data.count
      forgotten = max(forgotten ?? gone.time, gone.time)
      historyStart += 1
    }
    // The array is compacted now and then: each packet is moved about once.
    if historyStart > 256, historyStart * 2 > history.count {
      history.removeFirst(historyStart)
      historyStart = 0
    }
  }
}
