import PipelineGraph
import Synchronization

/// Takes a ``MediaTrack``'s frames into a graph: the start of a recorder's, a compositor's or an
/// output's branch over a track that another flow produces.
///
/// It subscribes when it is made and emits what the track queued, in order, until the track ends (or
/// ``close()`` is called): then a ``TrackEnded`` event and the end of stream. While nothing is queued it waits, woken by the track.
/// A flush keeps the subscription (frames queued meanwhile still come); `stop` cancels it.
///
/// Confined to its pipeline's executor; ``close()`` may be called from any thread.
public final class TrackSource: SourceNode, Sendable {
  /// A source.
  public typealias Input = Never
  /// The track's frames.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// The track taken.
  public let track: MediaTrack
  /// Frames the subscription queues before its producer is told to wait.
  public let capacity: Int
  /// The track its frames are tagged with (nil: the track's own id).
  public let tag: TrackID?
  /// The admission of the node it feeds, when that node holds back inputs that run ahead (a mixer):
  /// while its lane is closed, nothing is taken from the track.
  public let admission: LaneAdmission?
  private let subscription: MediaTrack.Subscription
  /// What the subscription calls when a frame is queued: nothing until `start` arms it.
  private let waker: Locked<(@Sendable () -> Void)?>
  /// True while a wake-up is queued on the executor.
  private let pending = WakePending()

  /// A source of `track`'s frames. It subscribes at once: frames pushed from now on are queued for the
  /// graph, even before it starts.
  /// `tag` re-tags the frames (a compositor tells its inputs apart by it); `admission` holds the source
  /// back while the lane of its tag (or of its track) is closed.
  public init(
    name: String = "TrackSource", track: MediaTrack, capacity: Int = 32, tag: TrackID? = nil,
    admission: LaneAdmission? = nil
  ) {
    self.name = name
    self.tag = tag
    self.admission = admission
    self.track = track
    self.capacity = capacity
    let waker = Locked<(@Sendable () -> Void)?>(nil)
    self.waker = waker
    // Called under the lock: a push that took the wake-up of before a flush (re-armed) and called it after
    // would set the one-queued flag with a stale wake-up, dropped, and the source would wait forever.
    subscription = track.subscribe(capacity: capacity) { waker.withLock { $0?() } }
  }

  /// Arms the wake-up and takes what was queued before the start.
  public func start(context: NodeContext<DecodedFrame>) throws { arm(context) }

  /// Arms the wake-up again: one made before a flush would be dropped as stale, and the source would
  /// never wake again. What was queued meanwhile is kept (a track goes on through a seek).
  public func flush(context: NodeContext<DecodedFrame>) { arm(context) }

  private func arm(_ context: NodeContext<DecodedFrame>) {
    // One wake-up queued at a time, not one per frame pushed: the executor's queue is first come, first
    // served, and a busy track's wake-ups (a file's pictures, read faster than they are encoded) queued
    // ahead of another source's kept that source waiting for seconds (a file's late sound reached the
    // recorder after its writer had given up on it).
    let pending = self.pending
    let wake = context.makeCompletion { (_: Void) in
      pending.flag.store(false, ordering: .releasing)
      context.wake()
    }
    waker.withLock {
      $0 = {
        if !pending.flag.exchange(true, ordering: .acquiringAndReleasing) { wake(()) }
      }
    }
    pending.flag.store(false, ordering: .releasing)
    admission?.register(lane) { wake(()) }
    wake(())
  }

  /// Emits what is queued.
  public func produce(context: NodeContext<DecodedFrame>) throws -> ProduceResult {
    if let admission, !admission.isOpen(lane) { return .waiting }
    // What is queued is taken now: a push after this queues a wake-up of its own.
    pending.flag.store(false, ordering: .releasing)
    let (frames, ended) = subscription.take(upTo: 16)
    for frame in frames {
      if let tag, tag != frame.track {
        context.emit(DecodedFrame(track: tag, time: frame.time, duration: frame.duration, frame: frame.frame))
      } else {
        context.emit(frame)
      }
    }
    if ended {
      // The wake-up holds the partition that holds this node: let it go (no cycle outlives the graph).
      waker.withLock { $0 = nil }
      admission?.register(lane, wake: nil)
      context.send(.custom(TrackEnded(track: lane)))
      return .finished
    }
    return frames.isEmpty ? .waiting : .produced
  }

  /// The lane its frames travel in: its tag, or its track.
  private var lane: TrackID { tag ?? track.id }

  deinit {
    // A graph that never started (or was dropped) must not leave its subscription filling up: the
    // track's producers would wait for room forever.
    subscription.cancel()
  }

  /// Ends the stream once what is queued has been emitted (a recorder's stop).
  public func close() { subscription.cancel() }

  /// Cancels the subscription.
  public func stop(context: NodeContext<DecodedFrame>) {
    waker.withLock { $0 = nil }
    admission?.register(lane, wake: nil)
    subscription.cancel()
  }
}

/// Whether a ``TrackSource``'s wake-up is queued (shared with the closures that queue and run it).
private final class WakePending: Sendable {
  let flag = Atomic(false)
}
