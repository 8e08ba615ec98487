import PipelineGraph

/// Passes packets on unchanged and keeps, per track, the last stretch of them that decodes on its own:
/// what a branch joining the graph here needs to show the picture at a time already read (an RTMP
/// server's GOP cache), without reading it again.
///
/// For each track it keeps the packets from the last independently decodable one (a keyframe; every
/// audio packet) at or before ``span`` behind the track's newest packet, at most ``maximumBytes`` of
/// them: past that the oldest group goes, and a group larger than that alone is not kept at all (the
/// track's history starts again at its next keyframe). Packets before a track's first keyframe are
/// not kept (nothing decodes them). A flush empties it.
///
/// Confined to its pipeline's executor: ``packets(of:decodableAt:generation:)`` is called there too (a
/// joining branch's node reads it in its `start`, in the same job that hangs the branch on this node,
/// so the history and the packets the branch gets next meet without a gap or an overlap).
public final class PacketHistory: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits them unchanged.
  public typealias Output = EncodedPacket

  /// The node's name.
  public let name: String
  /// How far behind a track's newest packet its history reaches (to a decodable packet at or before).
  public let span: MediaDuration
  /// The most bytes of packets kept per track.
  public let maximumBytes: Int
  private var tracks: [TrackID: TrackHistory] = [:]
  /// The flush generation the history belongs to.
  private var generation = 0

  /// One track's packets, oldest first, and where the decodable ones are among them. Both lists are
  /// read from a head on and compacted now and then, so that each packet is moved about once.
  private struct TrackHistory {
    var packets: [EncodedPacket] = []
    var head = 0
    /// Indices in `packets` of the decodable packets kept, ascending, from `entriesHead` on.
    var entries: [Int] = []
    var entriesHead = 0
    var bytes = 0

    var isEmpty: Bool { head == packets.count }

    mutating func keep(_ packet: EncodedPacket, decodable: Bool, span: MediaDuration, maximumBytes: Int) {
      if decodable {
        entries.append(packets.count)
      } else if isEmpty {
        return
      }
      packets.append(packet)
      bytes += packet.data.count
      let reach = (try? packet.time - span) ?? packet.time
      // The oldest group goes while the next one starts early enough, or while there are too many bytes.
      while entries.count - entriesHead > 1,
        packets[entries[entriesHead + 1]].time <= reach || bytes > maximumBytes
      {
        entriesHead += 1
        let end = entries[entriesHead]
        for index in head..<end { bytes -= packets[index].data.count }
        head = end
      }
      if bytes > maximumBytes {
        self = TrackHistory()
        return
      }
      if head > 256, head * 2 > packets.count {
        packets.removeFirst(head)
        entries = entries[entriesHead...].map { $0 - head }
        entriesHead = 0
        head = 0
      }
    }

    /// Where the last decodable packet at or before `time` is in `packets`.
    func entry(decodableAt time: MediaTime) -> Int? { entries[entriesHead...].last { packets[$0].time <= time } }

    /// Where the first decodable packet at or after `time` is in `packets`.
    func entry(decodableFrom time: MediaTime) -> Int? { entries[entriesHead...].first { packets[$0].time >= time } }
  }

  /// A history keeping `span` of each track (4 s by default, longer than a camera's GOP and than what
  /// waits between this node and the picture), at most `maximumBytes` per track.
  public init(
    name: String = "PacketHistory", span: MediaDuration = .microseconds(4_000_000), maximumBytes: Int = 16 << 20
  ) {
    self.name = name
    self.span = span
    self.maximumBytes = maximumBytes
  }

  /// The packets of `track` that show `time` when decoded in order: from its last decodable packet at or
  /// before `time` to the newest, in the order they passed; nil when that packet is no longer (or not
  /// yet) kept, or when the history is not of flush `generation` (a flush on its way: what is kept is
  /// of an older one).
  public func packets(of track: TrackID, decodableAt time: MediaTime, generation: Int) -> [EncodedPacket]? {
    guard generation == self.generation, let history = tracks[track], let entry = history.entry(decodableAt: time)
    else { return nil }
    return Array(history.packets[entry...])
  }

  /// The packets of `track` from its first decodable packet at or after `time` (the next keyframe among
  /// what was read already) to the newest; nil when none is kept yet, or when the history is not of
  /// flush `generation`.
  public func packets(of track: TrackID, decodableFrom time: MediaTime, generation: Int) -> [EncodedPacket]? {
    guard generation == self.generation, let history = tracks[track], let entry = history.entry(decodableFrom: time)
    else { return nil }
    return Array(history.packets[entry...])
  }

  /// Whether ``packets(of:decodableAt:generation:)`` would hand something over (without copying it).
  public func holds(_ track: TrackID, decodableAt time: MediaTime, generation: Int) -> Bool {
    generation == self.generation && tracks[track]?.entry(decodableAt: time) != nil
  }

  /// Keeps the packet, then hands it on.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    keep(input)
    context.emit(input)
  }

  /// A seek or a restart: nothing kept belongs to what comes next.
  public func flush(context: NodeContext<EncodedPacket>) {
    tracks = [:]
    generation = context.generation
  }

  private func keep(_ packet: EncodedPacket) {
    // In place: the track's lists are not copied.
    tracks[packet.track, default: TrackHistory()].keep(
      packet, decodable: packet.isKeyframe || packet.track.kind == .audio, span: span, maximumBytes: maximumBytes)
  }
}
