import Nodes
import PipelineGraph
import Synchronization

/// Counts one track's packets and keyframes as they pass; readable from any thread.
public final class KeyframeCounter: Node, Sendable {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "KeyframeCounter"
  /// The track counted.
  public let track: TrackID
  private let packets = Atomic(0)
  private let keyframes = Atomic(0)

  /// Counts `track`.
  public init(track: TrackID) { self.track = track }

  /// Counts a packet of the track.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    guard input.track == track else { return }
    packets.add(1, ordering: .relaxed)
    if input.isKeyframe { keyframes.add(1, ordering: .relaxed) }
  }

  /// Packets counted so far.
  public var packetCount: Int { packets.load(ordering: .relaxed) }
  /// Keyframes counted so far.
  public var keyframeCount: Int { keyframes.load(ordering: .relaxed) }
}

/// Keeps every item it gets; readable from any thread.
public final class Collector<Item: Sendable>: Node, Sendable {
  /// Consumes items.
  public typealias Input = Item
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "Collector"
  private let storage = Mutex<[Item]>([])

  /// Creates an empty collector.
  public init() {}

  /// Keeps the item.
  public func process(_ input: Item, context: NodeContext<Never>) throws { storage.withLock { $0.append(input) } }

  /// Everything kept so far, in order.
  public var items: [Item] { storage.withLock { $0 } }
}
