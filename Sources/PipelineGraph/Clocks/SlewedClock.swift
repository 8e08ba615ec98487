import Synchronization

/// A clock that runs on another (the monotonic clock, or a test's virtual one) but can be slowed down or
/// hurried by a little, so that it follows a device with a clock of its own: an audio device's samples
/// (the audio master clock of ffplay and GStreamer's audio sinks).
///
/// Its time is the base clock's minus a *correction* that ``follow(latency:lead:)`` steers: when what an
/// audio device holds would be heard later than the play means it to (the device plays slower than the
/// base clock runs, or a stall), the correction grows and the clock runs slow until the device's queue is
/// back to its lead; when sooner, it shrinks. Both picture and sound are paced on this clock, so the
/// picture follows the sound the device actually plays. A step is at most ``maximumStep`` per report
/// (an audio frame, 20–64 ms): the clock runs at most a few per cent off the base, and never backwards.
/// Without reports it is the base clock, shifted by the correction reached.
///
/// Thread-safe without locks (two atomics); no lifecycle. Timers are the base clock's, at the deadline
/// shifted by the correction when they are scheduled.
public final class SlewedClock: PipelineClock {
  /// The clock it runs on.
  public let base: any PipelineClock
  /// Microseconds subtracted from the base clock's time.
  private let offset = Atomic<Int64>(0)
  /// The latest time read: the clock never goes backwards, even while the correction grows.
  private let latest = Atomic<Int64>(.min)

  /// The most the correction moves per ``follow(latency:lead:)``.
  public static let maximumStep = MediaDuration.microseconds(1_000)

  /// A clock on `base`, with no correction yet.
  public init(base: any PipelineClock) { self.base = base }

  /// How far behind the base clock this one runs (negative: ahead).
  public var correction: MediaDuration { .microseconds(offset.load(ordering: .acquiring)) }

  /// The base clock's time minus the correction, never earlier than a time read before.
  public var now: ClockInstant {
    let value = base.now.microseconds &- offset.load(ordering: .acquiring)
    var seen = latest.load(ordering: .relaxed)
    while value > seen {
      let (exchanged, original) = latest.compareExchange(
        expected: seen, desired: value, ordering: .acquiringAndReleasing)
      if exchanged { return ClockInstant(microseconds: value) }
      seen = original
    }
    return ClockInstant(microseconds: seen)
  }

  /// Runs `job` on `executor` when this clock reaches `deadline` (the base clock's deadline shifted by
  /// the correction now).
  @discardableResult
  public func schedule(
    at deadline: ClockInstant, on executor: any PipelineExecutor, _ job: @escaping @Sendable () -> Void
  ) -> ClockTimer {
    let shifted = deadline.microseconds.addingReportingOverflow(offset.load(ordering: .acquiring))
    return base.schedule(
      at: ClockInstant(microseconds: shifted.overflow ? .max : shifted.partialValue), on: executor, job)
  }

  /// An audio device reports that the frame it was just given will start to be heard `latency` from now,
  /// where the play means `lead` (the pacer hands audio over `lead` before its instant): the correction
  /// moves by an eighth of the difference, at most ``maximumStep``. Later than meant slows the clock down,
  /// sooner hurries it.
  public func follow(latency: MediaDuration, lead: MediaDuration) {
    let error = latency.microseconds - lead.microseconds
    let step = max(-Self.maximumStep.microseconds, min(Self.maximumStep.microseconds, error / 8))
    offset.add(step, ordering: .releasing)
  }
}
