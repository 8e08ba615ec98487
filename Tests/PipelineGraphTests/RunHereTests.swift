import Dispatch
import Foundation
import Synchronization
import Testing

@testable import PipelineGraph

/// `PipelineExecutor.runHere`: a body runs at once where the calling thread may run the executor's jobs,
/// and nowhere else; while it runs, a manual executor runs nothing else.
@Suite struct RunHereTests {
  /// How long a test waits for another thread before it fails (instead of hanging).
  private static var patience: DispatchTime { .now() + 60 }

  @Test func aThreadExecutorRunsABodyHereOnlyOnItsOwnThread() throws {
    let executor = ThreadExecutor(name: "test.runHere")
    defer { executor.shutdown() }
    // Not from the test's thread.
    var ran = false
    #expect(!executor.runHere { ran = true })
    #expect(!ran)
    // From one of its jobs: at once, inside the job.
    let inside = Locked<[String]>([])
    let done = DispatchSemaphore(value: 0)
    executor.execute {
      inside.withLock { $0.append("job") }
      let here = executor.runHere { inside.withLock { $0.append("body") } }
      inside.withLock { $0.append(here ? "ran here" : "refused") }
      done.signal()
    }
    #expect(done.wait(timeout: Self.patience) == .success)
    #expect(inside.withLock { $0 } == ["job", "body", "ran here"])
  }

  @Test func aManualExecutorRunsABodyHereWhenNothingRunsItOrInsideItsJobs() {
    let executor = ManualExecutor()
    var order: [String] = []
    // Nothing runs it: the body runs now.
    #expect(executor.runHere { order.append("idle") })
    // Inside a job on the driving thread: at once, in the job.
    let log = Locked<[String]>([])
    executor.execute {
      log.withLock { $0.append("job") }
      _ = executor.runHere { log.withLock { $0.append("body") } }
    }
    executor.runUntilIdle()
    #expect(order == ["idle"])
    #expect(log.withLock { $0 } == ["job", "body"])
  }

  @Test func whileAnotherThreadRunsAManualExecutorABodyWaitsForItsRunToEnd() throws {
    let executor = ManualExecutor()
    let order = Locked<[String]>([])
    let inJob = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    executor.execute {
      inJob.signal()
      _ = release.wait(timeout: Self.patience)
      order.withLock { $0.append("job") }
    }
    let driver = Thread { executor.runUntilIdle() }
    driver.start()
    #expect(inJob.wait(timeout: Self.patience) == .success)
    // Made while the job runs on the driver's thread: the body runs here, after the run let go.
    let ranHere = DispatchSemaphore(value: 0)
    let caller = Thread {
      let here = executor.runHere { order.withLock { $0.append("body") } }
      order.withLock { $0.append(here ? "ran here" : "refused") }
      ranHere.signal()
    }
    caller.start()
    release.signal()
    #expect(ranHere.wait(timeout: Self.patience) == .success)
    #expect(order.withLock { $0 } == ["job", "body", "ran here"])
  }

  @Test func aRunDoesNotStartWhileABodyRunsOnAnotherThread() throws {
    let executor = ManualExecutor()
    let order = Locked<[String]>([])
    let inBody = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let holder = Thread {
      _ = executor.runHere {
        inBody.signal()
        _ = release.wait(timeout: Self.patience)
        order.withLock { $0.append("body") }
      }
    }
    holder.start()
    #expect(inBody.wait(timeout: Self.patience) == .success)
    // Queued while the body holds the executor, run by another thread as soon as it can: never before
    // the body has finished.
    executor.execute { order.withLock { $0.append("job") } }
    let ran = DispatchSemaphore(value: 0)
    let runner = Thread {
      executor.runUntilIdle()
      ran.signal()
    }
    runner.start()
    release.signal()
    #expect(ran.wait(timeout: Self.patience) == .success)
    #expect(order.withLock { $0 } == ["body", "job"])
  }
}
