import Dispatch
import PipelineGraph

/// Where a ``Replay`` runs: its executor, its clock, its workers, and how its callbacks are delivered.
///
/// - ``realtime(callbacks:)``: a thread of its own and the monotonic clock (an application), slewed
///   to follow an audio device's own clock when one is bound at 1× (a `SlewedClock`).
/// - ``freeRunning(callbacks:)``: the same semantics on a clock that jumps to the next presentation
///   as soon as the graph is idle (`tipipe play --pace fast`, snapshots, tests of whole runs).
/// - ``manual(executor:clock:)``: every job and every instant under a test's control (a
///   `ManualExecutor` and a `VirtualClock`; ReplayTestKit's `ReplayHarness` drives one).
///
/// A value; no states. The replay calls `deliver` from its executor and from its callers' threads, so
/// `deliver` must be thread-safe and run the callback later, not inside its own call.
package struct ReplayEnvironment: Sendable {
  /// Runs the graphs' nodes and the Replay's state: its control executor, where every command runs (a
  /// caller on another thread waits for it). It must outlive the Replay, and none of its jobs may wait
  /// for a thread that might be calling the Replay.
  package var executor: any PipelineExecutor
  /// Paces presentation.
  package var clock: any PipelineClock
  /// Runs blocking work (reads, hashing, decryption).
  package var workers: any WorkerExecutor
  /// Delivers one callback (on the main queue, the shared background queue, or as a test wishes);
  /// never called inside a Replay method's own call stack.
  package var deliver: @Sendable (@escaping @Sendable () -> Void) -> Void
  /// How long a play may receive (almost) nothing from the cloud before the objects in flight become
  /// gaps, and a second time before it fails with `cloudStorageUnavailable` (`CloudSegmentSource`'s stall
  /// budget, wall-clock); nil: no budget. A paused
  /// play whose read-ahead is full waits on nothing, and is not stalled.
  package var stallBudget: Duration? = .seconds(30)

  /// An environment of the caller's choosing.
  package init(
    executor: any PipelineExecutor, clock: any PipelineClock, workers: any WorkerExecutor,
    deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) {
    self.executor = executor
    self.clock = clock
    self.workers = workers
    self.deliver = deliver
  }

  /// Real time on a thread of the replay's own; callbacks on `callbacks` (the main queue by default).
  package static func realtime(callbacks: DispatchQueue = .main) -> ReplayEnvironment {
    // The monotonic clock, slewed to follow an audio device that says how long it holds its sound.
    ReplayEnvironment(
      executor: ThreadExecutor(name: "tipipe.replay"), clock: SlewedClock(base: MonotonicClock()),
      workers: WorkerPool.shared, deliver: { callbacks.async(execute: $0) })
  }

  /// Everything on `executor` under a test's control: the graphs' jobs, the workers' reads, and the
  /// callbacks, each queued there as a job of its own (never run inside the call that caused it, as
  /// the contract of ``deliver`` asks), on `clock`'s instants.
  package static func manual(executor: ManualExecutor, clock: VirtualClock) -> ReplayEnvironment {
    ReplayEnvironment(
      executor: executor, clock: clock, workers: executor, deliver: { [executor] in executor.execute($0) })
  }

  /// Replay semantics as fast as the machine allows; callbacks on `callbacks`.
  package static func freeRunning(callbacks: DispatchQueue) -> ReplayEnvironment {
    ReplayEnvironment(
      executor: ThreadExecutor(name: "tipipe.replay"), clock: VirtualClock(freeRunning: true),
      workers: WorkerPool.shared, deliver: { callbacks.async(execute: $0) })
  }
}
