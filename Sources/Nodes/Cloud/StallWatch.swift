import Dispatch
import Foundation

/// Ends an operation that receives almost nothing from the cloud for a while, whatever each of its
/// transfers does: a server that drips a byte a second keeps every transfer alive within its own
/// deadline, and an export of 120 such objects would otherwise last (objects ÷ transfers) × deadline.
///
/// While the operation has requests on the network, every tick adds up the bytes they (and those that
/// ended) received; when fewer than `minimumBytes` arrived over `budget`, `onStall` runs once, with the
/// bytes of that last window. With nothing on the network (a paused replay whose read-ahead is full, a
/// local library) the window starts again. Wall-clock time: the network's, not the graph's clock.
///
/// Thread-safe: ``watch(_:)`` from the operation's executor, ticks on a Dispatch queue.
final class StallWatch: @unchecked Sendable {
  let budget: Duration
  let minimumBytes: Int
  private let lock = NSLock()
  private var active: [ObjectIdentifier: ServiceRequest] = [:]
  private var settled = 0
  private var window: (start: ContinuousClock.Instant, bytes: Int) = (.now, 0)
  private var timer: DispatchSourceTimer?
  private var onStall: (@Sendable (Int) -> Void)?
  private var progressed = false

  init(budget: Duration, minimumBytes: Int, onStall: @escaping @Sendable (Int) -> Void) {
    self.budget = budget
    self.minimumBytes = minimumBytes
    self.onStall = onStall
    let timer = DispatchSource.makeTimerSource(queue: .global())
    let interval = max(Duration.milliseconds(50), budget / 10)
    let nanoseconds = Int(interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
    timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
    timer.setEventHandler { [weak self] in self?.tick() }
    self.timer = timer
    timer.resume()
  }

  deinit { timer?.cancel() }

  /// The requests now on the network (those gone since the last call ended: their bytes count).
  func watch(_ requests: [ServiceRequest]) {
    lock.withLock {
      var now: [ObjectIdentifier: ServiceRequest] = [:]
      for request in requests where request.bytesReceived != nil { now[ObjectIdentifier(request)] = request }
      for (id, request) in active where now[id] == nil { settled += request.bytesReceived ?? 0 }
      if active.isEmpty && !now.isEmpty { window = (.now, total(now)) }
      active = now
    }
  }

  /// Stops watching; `onStall` will not run.
  func cancel() {
    let timer = lock.withLock { () -> DispatchSourceTimer? in
      defer {
        self.timer = nil
        onStall = nil
      }
      return self.timer
    }
    timer?.cancel()
  }

  private func total(_ requests: [ObjectIdentifier: ServiceRequest]) -> Int {
    settled + requests.values.reduce(0) { $0 + ($1.bytesReceived ?? 0) }
  }

  /// True once a window of this watch received at least `minimumBytes`: the cloud answered since it
  /// started.
  var sawProgress: Bool { lock.withLock { progressed } }

  private func tick() {
    let stalled = lock.withLock { () -> (@Sendable (Int) -> Void, Int)? in
      let bytes = total(active)
      guard !active.isEmpty, bytes - window.bytes < minimumBytes else {
        if bytes - window.bytes >= minimumBytes { progressed = true }
        window = (.now, bytes)
        return nil
      }
      guard ContinuousClock.now - window.start >= budget, let onStall else { return nil }
      self.onStall = nil
      return (onStall, bytes - window.bytes)
    }
    guard let (onStall, bytes) = stalled else { return }
    cancel()
    onStall(bytes)
  }
}
