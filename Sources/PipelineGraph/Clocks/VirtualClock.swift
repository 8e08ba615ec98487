import Synchronization

/// A clock whose time moves only when told to: by a test (``advance(by:)``, ``crank()``), or, in
/// free-running mode, by itself whenever every executor it serves is idle.
///
/// Free-running is real time's semantics at the machine's full speed: time jumps straight to the next
/// timer once nothing else can happen. Export and `--pace fast` use it. Like GStreamer's test clock,
/// time never goes backwards.
///
/// When a due timer's executor is a ``ManualExecutor``, ``advance(to:)`` runs that executor until idle
/// after each timer, so work a timer triggers (and timers it schedules within the advanced span) happen
/// at the right virtual instant.
///
/// Thread-safe (a lock guards the timers; the time is written under it and read without it), with no
/// lifecycle. A timer's job runs on its
/// executor: ``advance(to:)`` and ``crank()`` submit it from the calling thread; in free-running mode
/// the idle handler of an executor it serves does, on that executor's thread.
public final class VirtualClock: PipelineClock {
  private struct Timer {
    var deadline: ClockInstant
    var sequence: Int
    var executor: any PipelineExecutor
    var job: @Sendable () -> Void
    var handle: ClockTimer
  }
  private struct State {
    var timers: [Timer] = []  // a binary min-heap on (deadline, sequence)
    var sequence = 0
    var executors: [ObjectIdentifier: any PipelineExecutor] = [:]
  }
  private let state: Locked<State>
  /// The time in microseconds: written only under the lock, forward only; read per frame without it.
  private let current: Atomic<Int64>
  /// True when the clock jumps to the next timer whenever its executors are idle.
  public let isFreeRunning: Bool

  /// Creates a clock at `start`; `freeRunning` makes it advance by itself when its executors are idle.
  public init(start: ClockInstant = .zero, freeRunning: Bool = false) {
    // Not counted by `LockTally`: the clock stands in for the monotonic one, which takes no lock.
    state = Locked(State(), counted: false)
    current = Atomic(start.microseconds)
    isFreeRunning = freeRunning
  }

  /// The current virtual time.
  public var now: ClockInstant { ClockInstant(microseconds: current.load(ordering: .acquiring)) }

  /// The deadline of the earliest pending timer, if any.
  public var nextDeadline: ClockInstant? {
    state.withLock { state in
      Self.dropCancelled(&state)
      return state.timers.first?.deadline
    }
  }

  /// The number of timers not yet fired or cancelled.
  public var pendingTimerCount: Int { state.withLock { $0.timers.count { !$0.handle.isCancelled } } }

  /// Schedules `job`; a deadline already reached submits it at once.
  @discardableResult
  public func schedule(
    at deadline: ClockInstant, on executor: any PipelineExecutor, _ job: @escaping @Sendable () -> Void
  ) -> ClockTimer {
    let handle = ClockTimer()
    let (due, newExecutor) = state.withLock { state -> (Bool, Bool) in
      let newExecutor = state.executors.updateValue(executor, forKey: ObjectIdentifier(executor)) == nil
      if deadline <= now { return (true, newExecutor) }
      state.sequence += 1
      Self.push(
        Timer(deadline: deadline, sequence: state.sequence, executor: executor, job: job, handle: handle),
        into: &state.timers)
      return (false, newExecutor)
    }
    if newExecutor && isFreeRunning {
      executor.setIdleHandler { [weak self] in self?.executorBecameIdle() }
    }
    if due { executor.execute(job) }
    return handle
  }

  /// Moves time forward by `duration`, firing every timer due on the way in deadline order.
  public func advance(by duration: Duration) {
    advance(to: now + duration)
  }

  /// Moves time forward to `target` (never backwards), firing every timer due on the way in deadline order.
  public func advance(to target: ClockInstant) {
    while let timer = popTimer(dueBy: target) {
      fire(timer)
    }
    state.withLock { _ in moveForward(to: target) }
  }

  /// Advances to the earliest pending timer and fires it (and every timer with the same deadline).
  /// Returns false when no timer is pending.
  @discardableResult
  public func crank() -> Bool {
    guard let deadline = nextDeadline else { return false }
    advance(to: deadline)
    return true
  }

  private func fire(_ timer: Timer) {
    timer.executor.execute(timer.job)
    if let manual = timer.executor as? ManualExecutor { manual.runUntilIdle() }
  }

  private func popTimer(dueBy target: ClockInstant) -> Timer? {
    state.withLock { state in
      Self.dropCancelled(&state)
      guard let first = state.timers.first, first.deadline <= target else { return nil }
      let timer = Self.pop(from: &state.timers)
      moveForward(to: timer.deadline)
      return timer
    }
  }

  /// Moves the time to `target` unless it is already there or later (under the lock).
  private func moveForward(to target: ClockInstant) {
    if target.microseconds > current.load(ordering: .relaxed) {
      current.store(target.microseconds, ordering: .releasing)
    }
  }

  private func executorBecameIdle() {
    let due = state.withLock { state -> [Timer] in
      guard state.executors.values.allSatisfy(\.isIdle) else { return [] }
      Self.dropCancelled(&state)
      guard let deadline = state.timers.first?.deadline else { return [] }
      moveForward(to: deadline)
      var due: [Timer] = []
      while let first = state.timers.first, first.deadline <= deadline {
        let timer = Self.pop(from: &state.timers)
        if !timer.handle.isCancelled { due.append(timer) }
      }
      return due
    }
    for timer in due { timer.executor.execute(timer.job) }
  }

  private static func dropCancelled(_ state: inout State) {
    while let first = state.timers.first, first.handle.isCancelled { _ = pop(from: &state.timers) }
  }

  private static func before(_ a: Timer, _ b: Timer) -> Bool {
    (a.deadline, a.sequence) < (b.deadline, b.sequence)
  }

  private static func push(_ timer: Timer, into heap: inout [Timer]) {
    heap.append(timer)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard before(heap[child], heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private static func pop(from heap: inout [Timer]) -> Timer {
    heap.swapAt(0, heap.count - 1)
    let top = heap.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < heap.count && before(heap[left], heap[smallest]) { smallest = left }
      if right < heap.count && before(heap[right], heap[smallest]) { smallest = right }
      if smallest == parent { break }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
    return top
  }
}
