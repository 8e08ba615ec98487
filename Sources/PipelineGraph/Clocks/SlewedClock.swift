import Synchronization

/// A clock that runs on another (the monotonic clock, or a test's virtual one) but can be slowed down or
/// hurried by a little, so that it follows a device with a clock of its own: an audio device's samples
/// (the audio master clock of ffplay and GStreamer's audio sinks).
///
/// Its time is the base clock's minus a *correction* that ``follow(latency:lead:frame:)`` steers: when what an
/// audio device holds would be heard later than the play means it to (the device plays slower than the
/// base clock runs, or a stall), the correction grows and the clock runs slow until the device's queue is
/// back to its lead; when sooner, it shrinks. Both picture and sound are paced on this clock, so the
/// picture follows the sound the device actually plays. A step is at most ``maximumStep`` per 64 ms of
/// sound reported: the clock runs at most about 1.5 % off the base, and never backwards. Without reports
/// it is the base clock, shifted by the correction reached. A timer keeps the correction of the moment it
/// was scheduled: a later step moves its firing by that step (a few ms), not more.
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

  /// The most the correction moves per 64 ms of sound reported to ``follow(latency:lead:frame:)``.
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
    let correction = offset.load(ordering: .acquiring)
    let shifted = deadline.microseconds.addingReportingOverflow(correction)
    let saturated = correction > 0 ? Int64.max : Int64.min
    return base.schedule(
      at: ClockInstant(microseconds: shifted.overflow ? saturated : shifted.partialValue), on: executor, job)
  }

  /// An audio device reports that the frame it was just given (lasting `frame`) will start to be heard
  /// `latency` from now, where the play means `lead` (the pacer hands audio over `lead` before its
  /// instant): the correction moves by an eighth of the difference, at most ``maximumStep`` per 64 ms of
  /// sound (about 1.5 %). Later than meant slows the clock down, sooner hurries it. A device that holds
  /// far more than the lead (more than four times: paused while the play runs, or stuck) is not followed:
  /// the clock would only crawl.
  public func follow(latency: MediaDuration, lead: MediaDuration, frame: MediaDuration) {
    let error = latency.microseconds - lead.microseconds
    guard latency.microseconds <= 4 * max(lead.microseconds, Self.maximumStep.microseconds) else { return }
    let limit = max(1, Self.maximumStep.microseconds * min(max(frame.microseconds, 0), 1_000_000) / 64_000)
    offset.add(max(-limit, min(limit, error / 8)), ordering: .releasing)
  }
}
