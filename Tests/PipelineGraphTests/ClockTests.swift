import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Clocks and timers")
struct ClockTests {
  @Test("timers fire in deadline order, equal deadlines in scheduling order")
  func timersFireInDeadlineOrder() {
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let fired = LockedArray<String>()
    for (name, at) in [("c", 30), ("a", 10), ("b", 20), ("a2", 10), ("d", 40)] {
      clock.schedule(at: ClockInstant(microseconds: Int64(at)), on: executor) {
        fired.append("\(name)@\(clock.now.microseconds)")
      }
    }
    clock.advance(by: .microseconds(35))
    #expect(fired.values == ["a@10", "a2@10", "b@20", "c@30"])
    #expect(clock.now.microseconds == 35)
    clock.advance(to: ClockInstant(microseconds: 5))  // never backwards
    #expect(clock.now.microseconds == 35)
    #expect(clock.crank())
    #expect(fired.values.last == "d@40")
    #expect(!clock.crank())
  }

  @Test("a timer scheduled by a timer within the advanced span fires at its own instant")
  func chainedTimers() {
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let fired = LockedArray<Int64>()
    @Sendable func tick() {
      fired.append(clock.now.microseconds)
      if fired.count < 5 { clock.schedule(at: clock.now + .microseconds(10), on: executor, tick) }
    }
    clock.schedule(at: ClockInstant(microseconds: 10), on: executor, tick)
    clock.advance(by: .microseconds(100))
    #expect(fired.values == [10, 20, 30, 40, 50])
  }

  @Test("cancelled timers do not fire")
  func cancelledTimers() {
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let fired = LockedArray<Int>()
    let timer = clock.schedule(at: ClockInstant(microseconds: 10), on: executor) { fired.append(1) }
    timer.cancel()
    clock.advance(by: .seconds(1))
    #expect(fired.count == 0)
  }

  @Test("a free-running clock jumps to the next timer whenever the executor is idle")
  func freeRunningClock() {
    let executor = ManualExecutor()
    let clock = VirtualClock(freeRunning: true)
    let fired = LockedArray<Int64>()
    clock.schedule(at: ClockInstant(microseconds: 3_600_000_000), on: executor) {
      fired.append(clock.now.microseconds)
    }
    clock.schedule(at: ClockInstant(microseconds: 1_000), on: executor) { fired.append(clock.now.microseconds) }
    executor.runUntilIdle()
    #expect(fired.values == [1_000, 3_600_000_000])
  }

  @Test("node timers run on the node's executor at the virtual instant")
  func nodeTimers() throws {
    final class Delay: Node {
      typealias Input = Int
      typealias Output = Int64
      func process(_ input: Int, context: NodeContext<Int64>) throws {
        context.scheduleTimer(after: .milliseconds(input)) { context.emit(context.now.microseconds) }
      }
    }
    let harness = try NodeHarness(Delay())
    harness.push(contentsOf: [30, 10, 20])
    harness.runUntilIdle()
    #expect(harness.outputItems.isEmpty)
    harness.advance(by: .milliseconds(25))
    #expect(harness.outputItems == [10_000, 20_000])
    harness.advance(by: .milliseconds(25))
    #expect(harness.outputItems == [10_000, 20_000, 30_000])
  }

  @Test("the monotonic clock never goes backwards")
  func monotonic() {
    let clock = MonotonicClock()
    var last = clock.now
    for _ in 0..<1000 {
      let next = clock.now
      #expect(next >= last)
      last = next
    }
  }
}
