import Dispatch

/// Worker threads shared by the pipelines of the process: a concurrent dispatch queue, so the number
/// of threads follows the machine (libdispatch's thread pool), not the number of pipelines.
///
/// Stateless and thread-safe; jobs run concurrently on the queue's threads.
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
