import PipelineGraph
import Testing

/// The audio master clock's clock: the base clock less a correction that a device's reports steer, a
/// little at a time, never backwards.
@Suite struct SlewedClockTests {
  let frame = MediaDuration.microseconds(64_000)
  let meant = MediaDuration.microseconds(100_000)

  @Test(
    "a device heard up to 40 ms later than meant slows the clock by at most 1 ms per 64 ms of sound; sooner hurries it")
  func stepsAreSmall() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    clock.follow(latency: .microseconds(140_000), meant: meant, frame: frame)
    #expect(clock.correction == .microseconds(1_000))
    clock.follow(latency: .microseconds(108_000), meant: meant, frame: frame)
    #expect(clock.correction == .microseconds(2_000))
    clock.follow(latency: .microseconds(60_000), meant: meant, frame: .microseconds(32_000))
    #expect(clock.correction == .microseconds(1_500))
    // A second or more: a paused or stuck device, not followed.
    clock.follow(latency: .microseconds(1_000_000), meant: meant, frame: frame)
    #expect(clock.correction == .microseconds(1_500))
    base.advance(to: ClockInstant(microseconds: 10_000))
    #expect(clock.now == ClockInstant(microseconds: 8_500))
  }

  @Test("off by more than 40 ms (a sound that came late, or early), the clock is set at once")
  func largeErrorsAreTakenAtOnce() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    base.advance(to: ClockInstant(microseconds: 200_000))
    #expect(clock.now == ClockInstant(microseconds: 200_000))
    // A frame meant 30 ms ago, heard in 60 ms: 90 ms late; the clock stands until the sound is there.
    // (Set back: the timers scheduled before fire early, and their waiters wait again; no need to wake them.)
    #expect(!clock.follow(latency: .microseconds(60_000), meant: .microseconds(-30_000), frame: frame))
    #expect(clock.correction == .microseconds(90_000))
    #expect(clock.now == ClockInstant(microseconds: 200_000))
    base.advance(to: ClockInstant(microseconds: 290_000))
    #expect(clock.now == ClockInstant(microseconds: 200_000))
    base.advance(to: ClockInstant(microseconds: 300_000))
    #expect(clock.now == ClockInstant(microseconds: 210_000))
    // Exactly 40 ms off is still slewed; a sound 50 ms early moves the clock 50 ms on.
    #expect(!clock.follow(latency: .microseconds(140_000), meant: meant, frame: frame))
    #expect(clock.correction == .microseconds(91_000))
    // Set ahead at once: the timers scheduled before would fire 50 ms late (the caller wakes their waiters).
    #expect(clock.follow(latency: .microseconds(50_000), meant: meant, frame: frame))
    #expect(clock.correction == .microseconds(41_000))
    #expect(clock.now == ClockInstant(microseconds: 259_000))
  }

  @Test("while the clock stands after being set back, how long until an instant counts from where it runs")
  func delaysCountFromTheRunningClock() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    base.advance(to: ClockInstant(microseconds: 200_000))
    #expect(clock.now == ClockInstant(microseconds: 200_000))
    clock.follow(latency: .microseconds(90_000), meant: .zero, frame: frame)
    // It reads 200 ms until the base is at 290 ms, but runs at 110 ms: 250 ms is 140 ms away, and a
    // sound reported then as heard in 140 ms is on time (nothing moves).
    #expect(clock.now == ClockInstant(microseconds: 200_000))
    #expect(clock.delay(until: ClockInstant(microseconds: 250_000)) == .microseconds(140_000))
    clock.follow(
      latency: .microseconds(140_000), meant: clock.delay(until: ClockInstant(microseconds: 250_000)), frame: frame)
    #expect(clock.correction == .microseconds(90_000))
    // A second or more off (a frame seconds late) is not followed.
    clock.follow(latency: .microseconds(10_000), meant: .microseconds(-2_000_000), frame: frame)
    #expect(clock.correction == .microseconds(90_000))
    #expect(clock.delay(until: ClockInstant(microseconds: .min)) == .microseconds(.min))
  }

  @Test("its time never goes backwards while the correction grows")
  func neverBackwards() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    base.advance(to: ClockInstant(microseconds: 1_000))
    #expect(clock.now == ClockInstant(microseconds: 1_000))
    for _ in 0..<5 { clock.follow(latency: .microseconds(130_000), meant: meant, frame: frame) }
    #expect(clock.correction == .microseconds(5_000))
    #expect(clock.now == ClockInstant(microseconds: 1_000))
    base.advance(to: ClockInstant(microseconds: 7_000))
    #expect(clock.now == ClockInstant(microseconds: 2_000))
  }

  @Test("a timer fires when the slewed clock reaches its deadline, saturating at the limits")
  func timers() {
    let executor = ManualExecutor()
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    for _ in 0..<3 { clock.follow(latency: .microseconds(130_000), meant: meant, frame: frame) }
    let fired = Locked<[Int64]>([])
    clock.schedule(at: ClockInstant(microseconds: 10_000), on: executor) {
      fired.withLock { $0.append(base.now.microseconds) }
    }
    clock.schedule(at: ClockInstant(microseconds: .max), on: executor) { fired.withLock { $0.append(-1) } }
    executor.runUntilIdle(firingTimersOf: base, through: ClockInstant(microseconds: 1_000_000))
    #expect(fired.withLock { $0 } == [13_000])
  }
}
