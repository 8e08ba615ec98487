/// Runs a pipeline's jobs one at a time, in the order they were submitted.
///
/// Every node of a partition runs on its executor, so nodes need no locks. ``ThreadExecutor`` runs jobs
/// on a dedicated thread; ``ManualExecutor`` runs them only when a test asks (swift-nio's
/// `EmbeddedEventLoop` idea).
///
/// Implementations are thread-safe: every requirement may be used from any thread.
public protocol PipelineExecutor: AnyObject, Sendable {
  /// Queues a job; it runs after every job queued before it. Callable from any thread.
  func execute(_ job: @escaping @Sendable () -> Void)

  /// True when no job is queued or running.
  var isIdle: Bool { get }

  /// Sets the handler the executor calls, on its own thread, each time its queue runs dry
  /// (a free-running clock uses it to jump to the next timer).
  func setIdleHandler(_ handler: (@Sendable () -> Void)?)

  /// Runs `body` on the calling thread, as one of this executor's jobs, when that thread may run them —
  /// it is the executor's own thread inside a job, or (a ``ManualExecutor``, which has no thread of its
  /// own) any thread, once no other runs it — and returns true; returns false, without running `body`,
  /// otherwise: then a job queued instead is run by the executor's thread.
  ///
  /// What an object confines to an executor is then touched by `body` as safely as by a job: a caller on
  /// the executor runs its command inline (a job cannot wait for a job queued behind it), any other
  /// queues it and waits (`Replay`'s commands, as ExoPlayer's blocking player messages). An executor of
  /// one's own implements it as ``ThreadExecutor`` does: true only on its thread.
  func runHere(_ body: () -> Void) -> Bool
}
