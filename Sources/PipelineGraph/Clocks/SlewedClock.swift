import Synchronization

/// A clock that runs on another (the monotonic clock, or a test's virtual one) but can be slowed down or
/// hurried by a little, so that it follows a device with a clock of its own: an audio device's samples
/// (the audio master clock of ffplay and GStreamer's audio sinks).
///
/// Its time is the base clock's minus a *correction* that ``follow(latency:meant:frame:)`` steers: when what an
/// audio device holds would be heard later than the play means it to (the device plays slower than the
/// base clock runs, or a stall), the correction grows and the clock runs slow until the device's queue is
/// back to its lead; when sooner, it shrinks. Both picture and sound are paced on this clock, so the
/// picture follows the sound the device actually plays. A step is at most ``maximumStep`` per 64 ms of
/// sound reported (the clock runs at most about 1.5 % off the base) unless the sound is off by more than
/// ``alignmentThreshold`` (a late first sound): then the clock is set at once. It never runs backwards.
/// Without reports it is the base clock, shifted by the correction reached. A timer keeps the correction
/// of the moment it was scheduled: a later step moves its firing by that step (a pacer whose timer fires
/// early waits again).
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

  /// The most the correction moves per 64 ms of sound reported to ``follow(latency:meant:frame:)``.
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

  /// How far the sound may be off before the clock is set at once rather than slewed: 40 ms (as
  /// GStreamer's audio sinks' alignment threshold). The first sound of a play, after a seek or a
  /// resume, is off by however late it came; slewed at 1.5 %, 90 ms would take six seconds.
  public static let alignmentThreshold = MediaDuration.microseconds(40_000)

  /// A device holding this much or more is not followed (paused while the play runs, or stuck): the
  /// clock would only crawl. A sound off by as much is not followed either (a frame seconds late).
  public static let ignoredLatency = MediaDuration.microseconds(1_000_000)

  /// How long until this clock reaches `instant`, as it runs now: from the base clock less the
  /// correction, not from ``now`` (which stands still after the correction grew at once, until the base
  /// catches up — measured from it, every report of that while would count the same error again).
  public func delay(until instant: ClockInstant) -> MediaDuration {
    let running = base.now.microseconds &- offset.load(ordering: .acquiring)
    let (delay, overflow) = instant.microseconds.subtractingReportingOverflow(running)
    return .microseconds(overflow ? (instant.microseconds > 0 ? .max : .min) : delay)
  }

  /// An audio device reports that the frame it was just given (lasting `frame`) will start to be heard
  /// `latency` from now, where the play means it to be heard `meant` from now (``delay(until:)`` its
  /// instant; negative when it came late). Off by more than ``alignmentThreshold``, the correction takes
  /// the whole difference at once (the clock stands while the sound catches up, or jumps to it);
  /// otherwise it moves by an eighth of it, at most ``maximumStep`` per 64 ms of sound (about 1.5 %).
  /// Later than meant slows the clock down, sooner hurries it. A latency or a difference of
  /// ``ignoredLatency`` or more is not followed. Returns true when the clock was set ahead at once: the
  /// timers scheduled before fire late by that much (they keep the correction they were scheduled with),
  /// and whatever waits on one should schedule again.
  @discardableResult
  public func follow(latency: MediaDuration, meant: MediaDuration, frame: MediaDuration) -> Bool {
    let bound = Self.ignoredLatency.microseconds
    guard latency.microseconds < bound, abs(meant.microseconds) < 10 * bound else { return false }
    let error = latency.microseconds - meant.microseconds
    guard abs(error) < bound else { return false }
    guard abs(error) <= Self.alignmentThreshold.microseconds else {
      offset.add(error, ordering: .releasing)
      return error < 0
    }
    let limit = max(1, Self.maximumStep.microseconds * min(max(frame.microseconds, 0), 1_000_000) / 64_000)
    offset.add(max(-limit, min(limit, error / 8)), ordering: .releasing)
    return false
  }
}
