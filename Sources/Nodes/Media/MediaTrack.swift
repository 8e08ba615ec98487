import PipelineGraph
import Synchronization

/// A track of decoded media that several flows take at once: one video or one audio stream of
/// ``DecodedFrame``s, produced by a graph branch (``TrackFeed``), a live source or code of one's own
/// (``push(_:)``), and taken by any number of subscribers — recorders, outputs, compositors
/// (``TrackSource``). Frames are shared, never copied: each subscriber holds a reference to the same
/// pixels or samples.
///
/// Each subscription queues at most its capacity: ``push(_:)`` tells the producer when a queue is full,
/// and a producer that can wait (a graph branch) waits for ``whenRoom(_:)``; one that cannot (a live
/// camera) pushes on, and a queue over four times its capacity drops its oldest frame (a slow subscriber
/// loses frames, never memory). ``end()`` ends the track for every subscriber; a subscription made after
/// it is ended at once.
///
/// Thread-safe: every method may be called from any thread.
public final class MediaTrack: Sendable {
  /// The track the frames carry.
  public let id: TrackID
  private let state = Locked(State())
  private let latest = Atomic(Int64.min)

  private struct State {
    var subscriptions: [Subscription] = []
    var ended = false
    var roomWaiters: [@Sendable () -> Void] = []
  }

  /// One subscriber's queue of frames.
  public final class Subscription: Sendable {
    /// Frames queued before ``push(_:)`` says the queue is full.
    public let capacity: Int
    private let queue = Locked(Queue())
    private let wake: @Sendable () -> Void
    private let roomFreed: @Sendable () -> Void
    /// Lets the track forget this subscription (it keeps no frame for a subscriber that left).
    private let leave: @Sendable (ObjectIdentifier) -> Void

    private struct Queue {
      var frames: [DecodedFrame] = []
      var ended = false
      var cancelled = false
      var dropped = 0
      var count: Int { frames.count }
    }

    init(
      capacity: Int, wake: @escaping @Sendable () -> Void, roomFreed: @escaping @Sendable () -> Void,
      leave: @escaping @Sendable (ObjectIdentifier) -> Void
    ) {
      self.capacity = max(1, capacity)
      self.wake = wake
      self.roomFreed = roomFreed
      self.leave = leave
    }

    /// Queues a frame; false when the queue is now full.
    func enqueue(_ frame: DecodedFrame) -> Bool {
      let room = queue.withLock { queue -> Bool in
        guard !queue.cancelled, !queue.ended else { return true }
        queue.frames.append(frame)
        if queue.count > capacity * 4 {
          queue.frames.removeFirst()
          queue.dropped += 1
        }
        return queue.count < capacity
      }
      wake()
      return room
    }

    func finish() {
      queue.withLock { $0.ended = true }
      wake()
    }

    /// Takes up to `limit` queued frames; `ended` once the track ended and nothing is left.
    public func take(upTo limit: Int) -> (frames: [DecodedFrame], ended: Bool) {
      let (frames, ended, freed) = queue.withLock { queue -> ([DecodedFrame], Bool, Bool) in
        let wasFull = queue.count >= capacity
        let end = min(queue.frames.count, max(1, limit))
        let taken = Array(queue.frames[..<end])
        // Taken frames leave the queue at once: a subscription never keeps a frame alive after its taker
        // has it (the queue is at most four times the capacity, so the shift is short).
        queue.frames.removeFirst(end)
        return (taken, (queue.ended || queue.cancelled) && queue.count == 0, wasFull && queue.count < capacity)
      }
      if freed { roomFreed() }
      return (frames, ended)
    }

    /// Frames dropped because the subscriber fell more than four times its capacity behind.
    public var droppedFrames: Int { queue.withLock { $0.dropped } }

    /// Ends this subscription as if the track had ended (what is queued is still taken).
    public func cancel() {
      queue.withLock { $0.cancelled = true }
      leave(ObjectIdentifier(self))
      wake()
      roomFreed()
    }
  }

  /// True when its frames come in real time (a camera, a replay's outputs): a consumer waiting for a
  /// first frame gives up after a while. False for a file's track (`FileTracks`-like producers): every
  /// frame comes, as fast as it is read, until the track ends — a file's sound may begin minutes in.
  public let isLive: Bool

  /// A track of `id`'s kind; `isLive` says whether its frames come in real time.
  public init(id: TrackID, isLive: Bool = true) {
    self.id = id
    self.isLive = isLive
  }

  /// The kind of media it carries.
  public var kind: TrackKind { id.kind }

  /// A new subscription queueing up to `capacity` frames; `wake` is called (from any thread) whenever a
  /// frame is queued or the track ends.
  public func subscribe(capacity: Int = 32, wake: @escaping @Sendable () -> Void) -> Subscription {
    let subscription = Subscription(
      capacity: capacity, wake: wake, roomFreed: { [weak self] in self?.releaseWaiters() },
      leave: { [weak self] id in self?.state.withLock { $0.subscriptions.removeAll { ObjectIdentifier($0) == id } } })
    let ended = state.withLock { state -> Bool in
      if !state.ended { state.subscriptions.append(subscription) }
      return state.ended
    }
    if ended { subscription.finish() }
    return subscription
  }

  /// Hands `frame` to every subscriber; false when one of their queues is full (a producer that can
  /// wait should wait for ``whenRoom(_:)``). Frames of another kind are ignored.
  @discardableResult
  public func push(_ frame: DecodedFrame) -> Bool {
    let isPicture = frame.frame.width > 0
    guard isPicture == (id.kind == .video) else { return true }
    let end = (try? frame.time + frame.duration) ?? frame.time
    latest.max(end.microseconds, ordering: .relaxed)
    let subscriptions = state.withLock { $0.ended ? [] : $0.subscriptions }
    var room = true
    for subscription in subscriptions where !subscription.isCancelled {
      room = subscription.enqueue(frame) && room
    }
    return room
  }

  /// Calls `body` (from any thread) once a full queue has room again, or at once when none is full.
  public func whenRoom(_ body: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      let full = state.subscriptions.contains { !$0.isCancelled && $0.isFull }
      if full { state.roomWaiters.append(body) }
      return !full
    }
    if now { body() }
  }

  private func releaseWaiters() {
    let waiters = state.withLock { state -> [@Sendable () -> Void] in
      guard !state.subscriptions.contains(where: { !$0.isCancelled && $0.isFull }) else { return [] }
      defer { state.roomWaiters = [] }
      return state.roomWaiters
    }
    for waiter in waiters { waiter() }
  }

  /// Ends the track: every subscriber takes what is queued, then its end.
  public func end() {
    let (subscriptions, waiters) = state.withLock { state in
      state.ended = true
      defer { state.roomWaiters = [] }
      return (state.subscriptions, state.roomWaiters)
    }
    for subscription in subscriptions { subscription.finish() }
    for waiter in waiters { waiter() }
  }

  /// Where the latest frame pushed ends (the track's "now"); nil before the first.
  public var latestEnd: MediaTime? {
    let value = latest.load(ordering: .relaxed)
    return value == .min ? nil : MediaTime(microseconds: value)
  }

  /// True once ``end()`` was called.
  public var isEnded: Bool { state.withLock { $0.ended } }
}

extension MediaTrack.Subscription {
  fileprivate var isCancelled: Bool { queue.withLock { $0.cancelled } }
  fileprivate var isFull: Bool { queue.withLock { $0.count >= capacity } }
}

/// A track is where a replay's or a player's Video Output can draw: each presented picture is pushed
/// (a recorder of what plays, a compositor of several plays). A full subscriber loses its oldest frames
/// past four times its capacity, as with any live source: presentation never waits for a recorder.
extension MediaTrack: VideoRenderer {
  /// Pushes the presented picture.
  public func render(_ frame: DecodedFrame) { push(frame) }
}

/// A track is where a replay's Audio Output can play: each presented frame is pushed as decoded (the
/// output's volume is the listener's, not the recording's).
extension MediaTrack: AudioDevice {
  /// Pushes the presented sound.
  public func play(_ frame: DecodedFrame, volume: Int) { push(frame) }
}
