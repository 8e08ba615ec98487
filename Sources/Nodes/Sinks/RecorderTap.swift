import PipelineGraph

/// The replay graph's tap for recorders: hands every packet to the recorders the replay holds now.
///
/// Confined to its pipeline's executor. The recorders are a `Published` list (tasks come and go while
/// the graph runs): a packet costs an atomic load, not a lock, unless the list changed. A seek's flush
/// is a discontinuity for every recorder (``ReplayRecorder/discontinuity()``), in order with the
/// packets: what was read before the seek and not played is dropped, and the next packets start a new
/// stretch.
///
/// It keeps what passed in the last ``historySpan`` of media (at most ``historyBytes`` of packets; a
/// packet is a slice of its object's bytes, so the objects they come from stay in memory with them): the
/// tap runs ahead of what is presented by what waits before the decoders, so a recorder that starts
/// while the graph runs gets from it the packets at and after its start (``join(_:generation:)``)
/// instead of a graph built again that reads them again.
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
  /// The packets of the span kept, oldest first, from `historyStart` on (those before it are let go:
  /// nil, so that they hold no memory).
  private var history: [EncodedPacket?] = []
  private var historyStart = 0
  private var keptBytes = 0
  /// The latest time of a packet let go from the history since the graph started or flushed: a
  /// recorder starting at or before it cannot join.
  private var forgotten: MediaTime?
  /// The flush generation the history belongs to.
  private var generation = 0

  /// A tap that hands media to the `recorders` published at each packet; unless `paced` (no output
  /// presents, so nothing tells the position) what is read counts as played.
  public init(paced: Bool, recorders: Published<[ReplayRecorder]>) {
    self.paced = paced
    self.recorders = recorders.reader()
  }

  /// Hands `recorder` what the tap kept from its ``ReplayRecorder/startsAt`` on, in order (on the
  /// pipeline's executor, before the next packet reaches the tap), when the graph is in flush
  /// `generation`: true when that is all it missed; false, giving it nothing, when a packet it would
  /// record was let go already, or when the tap is not paced (what it hands on counts as played and would
  /// be written at once) — the graph must then read from its start again. With a flush of a later
  /// generation on its way to the tap (a seek not arrived yet), what the tap kept is of the old one:
  /// nothing is handed, and the recorder takes the new generation's packets as they come (true).
  public func join(_ recorder: ReplayRecorder, generation: Int) -> Bool {
    guard paced else { return false }
    guard generation == self.generation else { return generation > self.generation }
    if let forgotten, forgotten >= recorder.startsAt { return false }
    for case let packet? in history[historyStart...] { recorder.take(packet) }
    return true
  }

  /// A seek: each recorder's stretch ends where the play left it.
  public func flush(context: NodeContext<Never>) {
    history = []
    historyStart = 0
    keptBytes = 0
    forgotten = nil
    generation = context.generation
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
    while historyStart < history.count - 1, let gone = history[historyStart],
      gone.time < oldest || keptBytes > Self.historyBytes
    {
      keptBytes -= gone.data.count
      forgotten = max(forgotten ?? gone.time, gone.time)
      history[historyStart] = nil
      historyStart += 1
    }
    // The array is compacted now and then: each packet is moved about once.
    if historyStart > 256, historyStart * 2 > history.count {
      history.removeFirst(historyStart)
      historyStart = 0
    }
  }
}
