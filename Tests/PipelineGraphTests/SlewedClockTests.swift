import PipelineGraph
import Testing

/// The audio master clock's clock: the base clock less a correction that a device's reports steer, a
/// little at a time, never backwards.
@Suite struct SlewedClockTests {
  let frame = MediaDuration.microseconds(64_000)
  let lead = MediaDuration.microseconds(100_000)

  @Test("a device heard later than meant slows the clock by at most 1 ms per 64 ms of sound; sooner hurries it")
  func stepsAreSmall() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    clock.follow(latency: .microseconds(300_000), lead: lead, frame: frame)
    #expect(clock.correction == .microseconds(1_000))
    clock.follow(latency: .microseconds(108_000), lead: lead, frame: frame)
    #expect(clock.correction == .microseconds(2_000))
    clock.follow(latency: .microseconds(0), lead: lead, frame: .microseconds(32_000))
    #expect(clock.correction == .microseconds(1_500))
    // Four times the lead or more: a paused or stuck device, not followed.
    clock.follow(latency: .microseconds(400_001), lead: lead, frame: frame)
    #expect(clock.correction == .microseconds(1_500))
    base.advance(to: ClockInstant(microseconds: 10_000))
    #expect(clock.now == ClockInstant(microseconds: 8_500))
  }

  @Test("its time never goes backwards while the correction grows")
  func neverBackwards() {
    let base = VirtualClock()
    let clock = SlewedClock(base: base)
    base.advance(to: ClockInstant(microseconds: 1_000))
    #expect(clock.now == ClockInstant(microseconds: 1_000))
    for _ in 0..<5 { clock.follow(latency: .microseconds(390_000), lead: lead, frame: frame) }
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
    for _ in 0..<3 { clock.follow(latency: .microseconds(390_000), lead: lead, frame: frame) }
    let fired = Locked<[Int64]>([])
    clock.schedule(at: ClockInstant(microseconds: 10_000), on: executor) {
      fired.withLock { $0.append(base.now.microseconds) }
    }
    clock.schedule(at: ClockInstant(microseconds: .max), on: executor) { fired.withLock { $0.append(-1) } }
    executor.runUntilIdle(firingTimersOf: base, through: ClockInstant(microseconds: 1_000_000))
    #expect(fired.withLock { $0 } == [13_000])
  }
}
