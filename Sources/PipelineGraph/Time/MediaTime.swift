/// A point in recording time: UTC microseconds since the Unix epoch.
///
/// Inside the graph every time is a `MediaTime` and every length a ``MediaDuration``; the seed's
/// milliseconds exist only at the API edge, through ``milliseconds`` (rounded to the nearest, halves
/// away from zero: the one rounding rule of the time model, see ``MediaDuration``) and
/// ``init(checkedMilliseconds:)``. Arithmetic is checked:
/// a result that does not fit throws ``MediaTimeOverflow``, never traps.
public struct MediaTime: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  /// UTC microseconds since 1970-01-01T00:00:00Z.
  public let microseconds: Int64

  /// Creates a time from UTC microseconds.
  public init(microseconds: Int64) { self.microseconds = microseconds }

  /// Creates a time from UTC milliseconds (the segment format's unit).
  ///
  /// - Precondition: `milliseconds` is in ``validMilliseconds``; values from outside the process
  ///   (arguments, indexes, segment headers) are checked with ``init(checkedMilliseconds:)`` first.
  public init(milliseconds: Int64) {
    precondition(Self.validMilliseconds.contains(milliseconds), "\(milliseconds) ms is not a valid time")
    microseconds = milliseconds * 1000
  }

  /// The milliseconds a time may have: ±2^62 µs, so that the difference of any two times, and a time
  /// plus any span of ten days, still fits in `Int64` microseconds. Outside values (about ±146,000 years
  /// around 1970) are refused where they enter: `invalidArgument` for arguments, `mediaUnreadable` for
  /// a segment, a malformed index for an index entry.
  public static let validMilliseconds: ClosedRange<Int64> = -4_611_686_018_427_387...4_611_686_018_427_387

  /// A time from UTC milliseconds, or nil when they are outside ``validMilliseconds``.
  public init?(checkedMilliseconds milliseconds: Int64) {
    guard Self.validMilliseconds.contains(milliseconds) else { return nil }
    self.init(milliseconds: milliseconds)
  }

  /// The time in whole UTC milliseconds, rounded to the nearest (halves away from zero): the one
  /// conversion of a time to milliseconds (reports, the seed's API, logs).
  public var milliseconds: Int64 { MediaDuration.roundedDivide(microseconds, by: 1000) }

  /// `duration` later.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func + (time: MediaTime, duration: MediaDuration) throws(MediaTimeOverflow) -> MediaTime {
    MediaTime(
      microseconds: try MediaTimeOverflow.check(
        time.microseconds.addingReportingOverflow(duration.microseconds), "\(time) + \(duration)"))
  }

  /// `duration` earlier.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func - (time: MediaTime, duration: MediaDuration) throws(MediaTimeOverflow) -> MediaTime {
    MediaTime(
      microseconds: try MediaTimeOverflow.check(
        time.microseconds.subtractingReportingOverflow(duration.microseconds), "\(time) - \(duration)"))
  }

  /// The duration from `earlier` to `later` (negative when `later` is earlier).
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func - (later: MediaTime, earlier: MediaTime) throws(MediaTimeOverflow) -> MediaDuration {
    .microseconds(
      try MediaTimeOverflow.check(
        later.microseconds.subtractingReportingOverflow(earlier.microseconds), "\(later) - \(earlier)"))
  }

  /// `duration` later, but never after `limit` (nor before `self` for a negative duration): for times
  /// that are bounded by a range, where an absurd duration from outside must not overflow.
  public func advanced(by duration: MediaDuration, notAfter limit: MediaTime) -> MediaTime {
    let (sum, overflow) = microseconds.addingReportingOverflow(max(0, duration.microseconds))
    return overflow ? max(self, limit) : MediaTime(microseconds: min(sum, max(microseconds, limit.microseconds)))
  }

  /// Orders times.
  public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool { lhs.microseconds < rhs.microseconds }

  /// `<ms>ms`.
  public var description: String { "\(milliseconds)ms" }
}
