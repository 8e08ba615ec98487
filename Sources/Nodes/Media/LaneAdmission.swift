import PipelineGraph

/// Back-pressure per input for a node that joins several sources on one edge each (a mixer): the node
/// closes the lane of an input that runs too far ahead of the others, and that input's ``TrackSource``
/// stops taking from its track until the lane opens again — so a file that decodes faster than another
/// waits for it instead of being queued without bound (or the slower one being mixed without).
///
/// Lanes are open until closed. Thread-safe: the node sets lanes on its executor, the sources read them
/// on theirs, and opening a lane wakes its source.
public final class LaneAdmission: Sendable {
  private struct Lane {
    var open = true
    var wake: (@Sendable () -> Void)?
  }
  private let lanes = Locked<[TrackID: Lane]>([:])

  /// An admission with every lane open.
  public init() {}

  /// True while the source of `lane` may take more.
  public func isOpen(_ lane: TrackID) -> Bool { lanes.withLock { $0[lane]?.open ?? true } }

  /// Opens or closes `lane`; opening wakes its source.
  public func set(_ lane: TrackID, open: Bool) { _ = update([(lane, open)]) }

  /// Opens or closes each lane of `states` under one lock (a mixer sets all its lanes after each block);
  /// the sources of lanes that open are woken. True when one of them is closed.
  @discardableResult
  public func update(_ states: some Sequence<(TrackID, Bool)>) -> Bool {
    var closed = false
    let wakes = lanes.withLock { lanes -> [@Sendable () -> Void] in
      var wakes: [@Sendable () -> Void] = []
      for (lane, open) in states {
        let wasOpen = lanes[lane]?.open ?? true
        lanes[lane, default: Lane()].open = open
        if open, !wasOpen, let wake = lanes[lane]?.wake { wakes.append(wake) }
        closed = closed || !open
      }
      return wakes
    }
    for wake in wakes { wake() }
    return closed
  }

  /// Sets (or, with nil, forgets) what wakes the source of `lane`.
  func register(_ lane: TrackID, wake: (@Sendable () -> Void)?) {
    lanes.withLock { $0[lane, default: Lane()].wake = wake }
  }
}
