import Dispatch

/// Runs the blocking or heavy jobs nodes hand off (hashing, decryption, file reads, finalizing a file,
/// a network thread), possibly several at once and in any order; results come back to the node through
/// ``NodeContext/runOnWorker(_:then:)``.
///
/// The pipeline provides it (``Pipeline/workers``), so a test can run a whole media graph on its own
/// thread: a ``ManualExecutor`` is also a worker executor, and it runs worker jobs only when the test
/// drives it.
public protocol WorkerExecutor: AnyObject, Sendable {
  /// Queues a job. Callable from any thread.
  func execute(_ job: @escaping @Sendable () -> Void)
}

/// Worker threads shared by the pipelines of the process: a concurrent dispatch queue, so the number
/// of threads follows the machine (libdispatch's thread pool), not the number of pipelines.
public final class WorkerPool: WorkerExecutor {
  private let queue: DispatchQueue

  /// The pool every pipeline uses unless it is given another one.
  public static let shared = WorkerPool(label: "tipipe.workers")

  /// Creates a pool whose threads carry `label` (in debuggers and `top -H`).
  public init(label: String) {
    queue = DispatchQueue(label: label, attributes: .concurrent)
  }

  /// Runs `job` on a worker thread.
  public func execute(_ job: @escaping @Sendable () -> Void) { queue.async(execute: job) }
}

extension ManualExecutor: WorkerExecutor {}
