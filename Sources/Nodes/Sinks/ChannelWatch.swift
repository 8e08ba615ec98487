import PipelineGraph

/// Watches the packets a replay reads for outputs bound to a channel that carries nothing while other
/// channels of the same kind do (what seed 000 reports as error 6130): once media of the kind has kept coming for
/// ``patience`` of media time with none of the watched track's channel, the track is reported, with the
/// time it was noticed at, once.
///
/// Confined to its pipeline's executor, where `report` is called with the flush generation of the packet
/// that told; a track is reported once per flush generation (a flush re-arms the watch: media times jump
/// at a seek).
public final class ChannelWatch: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink (it watches a fan-out).
  public typealias Output = Never

  /// The node's name.
  public let name = "ChannelWatch"
  /// How long other channels may carry media while the watched one carries none.
  public let patience: MediaDuration
  private var watched: [TrackID: MediaTime?]
  private var reported: Set<TrackID> = []
  /// The time of each track's latest packet, and of each kind's, in this flush generation: what a track
  /// watched from a time already passed is judged by.
  private var lastSeen: [TrackID: MediaTime] = [:]
  private var latest: [TrackKind: MediaTime] = [:]
  private var generation = 0
  private let report: (_ track: TrackID, _ time: MediaTime, _ generation: Int) -> Void

  /// Watches `tracks`; `report` is called on the graph's executor.
  public init(
    tracks: Set<TrackID>, patience: MediaDuration = .microseconds(5_000_000),
    report: @escaping (_ track: TrackID, _ time: MediaTime, _ generation: Int) -> Void
  ) {
    self.patience = patience
    self.report = report
    watched = Dictionary(uniqueKeysWithValues: tracks.map { ($0, nil) })
  }

  /// Watches `track` too (an output joined a running replay), counting from `start` (its position),
  /// on the pipeline's executor. What was read ahead of `start` has passed the watch already, so it
  /// judges that stretch from what it noted of it: when media of the kind has come for ``patience``
  /// since `start` without the track, the track is reported at once — returned (time noticed, flush
  /// generation), not passed to `report`, since the caller is inside its own command.
  public func watch(_ track: TrackID, since start: MediaTime) -> (time: MediaTime, generation: Int)? {
    guard watched[track] == nil else { return nil }
    if let seen = lastSeen[track], seen >= start {
      watched[track] = .some(nil)
      return nil
    }
    watched[track] = start
    guard let head = latest[track.kind], let waited = try? head - start, waited >= patience,
      let noticed = try? start + patience
    else { return nil }
    reported.insert(track)
    return (noticed, generation)
  }

  /// Stops watching `track` (its last output left); on the pipeline's executor.
  public func unwatch(_ track: TrackID) {
    watched[track] = nil
    reported.remove(track)
  }

  /// Notes the packet for every watched track of its kind.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    lastSeen[input.track] = input.time
    latest[input.track.kind] = input.time
    generation = context.generation
    for (track, since) in watched where track.kind == input.track.kind && !reported.contains(track) {
      if input.track == track {
        watched[track] = .some(nil)
      } else if let since {
        guard let waited = try? input.time - since, waited >= patience else { continue }
        reported.insert(track)
        report(track, input.time, context.generation)
      } else {
        watched[track] = input.time
      }
    }
  }

  /// Re-arms the watch.
  public func flush(context: NodeContext<Never>) {
    for track in watched.keys { watched[track] = .some(nil) }
    reported.removeAll()
    lastSeen.removeAll()
    latest.removeAll()
    generation = context.generation
  }
}
