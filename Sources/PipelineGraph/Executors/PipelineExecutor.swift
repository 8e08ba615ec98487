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
}
