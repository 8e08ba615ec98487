import Dispatch

/// Runs the blocking or heavy jobs nodes hand off (hashing, decryption, file reads, finalizing a file,
/// a network thread), possibly several at once and in any order; results come back to the node through
/// ``NodeContext/runOnWorker(_:then:)``.
///
/// The pipeline provides it (``Pipeline/workers``), so a test can run a whole media graph on its own
/// thread: a ``ManualExecutor`` is also a worker executor, and it runs worker jobs only when the test
/// drives it.
///
/// Implementations have no states and are thread-safe; jobs run on their own threads (for a
/// ``ManualExecutor``, on the thread driving it).
public protocol WorkerExecutor: AnyObject, Sendable {
  /// Queues a job. Callable from any thread.
  func execute(_ job: @escaping @Sendable () -> Void)
}

extension ManualExecutor: WorkerExecutor {}
