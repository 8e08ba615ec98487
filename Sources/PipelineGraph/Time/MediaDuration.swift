/// A length of recording time, in microseconds: what a frame lasts, the distance between two
/// ``MediaTime``s, a stretch of a report.
///
/// Arithmetic is checked: a result outside what `Int64` microseconds hold (about ±292,000 years) throws
/// ``MediaTimeOverflow`` instead of trapping, so values from outside (indexes, headers, arguments) can
/// be combined safely.
///
/// Rounding: every conversion that is not exact (to milliseconds, to and from a stream's time base, a
/// scaled duration) rounds to the nearest value, halves away from zero — libavutil's `AV_ROUND_NEAR_INF`,
/// so that a time converted to a time base and back lands on the same tick. It is the one rule of the
/// whole time model (see ``MediaTime``).
public struct MediaDuration: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  /// The length in microseconds.
  public let microseconds: Int64

  private init(exactly microseconds: Int64) { self.microseconds = microseconds }

  /// No time at all.
  public static let zero = MediaDuration(exactly: 0)

  /// A duration of `value` microseconds.
  public static func microseconds(_ value: Int64) -> MediaDuration { MediaDuration(exactly: value) }

  /// A duration of `value` milliseconds.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func milliseconds(_ value: Int64) throws(MediaTimeOverflow) -> MediaDuration {
    MediaDuration(exactly: try MediaTimeOverflow.check(value.multipliedReportingOverflow(by: 1000), "\(value) ms"))
  }

  /// A duration of `value` seconds.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func seconds(_ value: Int64) throws(MediaTimeOverflow) -> MediaDuration {
    MediaDuration(exactly: try MediaTimeOverflow.check(value.multipliedReportingOverflow(by: 1_000_000), "\(value) s"))
  }

  /// `ticks` of `timeBase` (a stream's unit), rounded to the nearest (halves away from zero).
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public init(ticks: Int64, timeBase: TimeBase) throws(MediaTimeOverflow) {
    microseconds = try Self.scale(
      ticks, by: Int64(timeBase.numerator) * 1_000_000, over: Int64(timeBase.denominator), what: "\(ticks) ticks")
  }

  /// The length in whole milliseconds, rounded to the nearest (halves away from zero).
  public var milliseconds: Int64 { Self.roundedDivide(microseconds, by: 1000) }

  /// The length in ticks of `timeBase`, rounded to the nearest (halves away from zero).
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public func ticks(in timeBase: TimeBase) throws(MediaTimeOverflow) -> Int64 {
    try Self.scale(
      microseconds, by: Int64(timeBase.denominator), over: Int64(timeBase.numerator) * 1_000_000, what: "\(self)")
  }

  /// The duration a stretch of media takes to play at `rate` (40 ms at 2× take 20 ms), rounded to the
  /// nearest (halves away from zero).
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public func scaled(by rate: PlaybackRate) throws(MediaTimeOverflow) -> MediaDuration {
    MediaDuration(
      exactly: try Self.scale(microseconds, by: rate.denominator, over: rate.numerator, what: "\(self) at \(rate)"))
  }

  /// The sum.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func + (lhs: MediaDuration, rhs: MediaDuration) throws(MediaTimeOverflow) -> MediaDuration {
    MediaDuration(
      exactly: try MediaTimeOverflow.check(
        lhs.microseconds.addingReportingOverflow(rhs.microseconds), "\(lhs) + \(rhs)"))
  }

  /// The difference.
  /// - Throws: ``MediaTimeOverflow`` when it does not fit.
  public static func - (lhs: MediaDuration, rhs: MediaDuration) throws(MediaTimeOverflow) -> MediaDuration {
    MediaDuration(
      exactly: try MediaTimeOverflow.check(
        lhs.microseconds.subtractingReportingOverflow(rhs.microseconds), "\(lhs) - \(rhs)"))
  }

  /// Orders durations.
  public static func < (lhs: MediaDuration, rhs: MediaDuration) -> Bool { lhs.microseconds < rhs.microseconds }

  /// `40ms`, or `40.5ms` when not whole milliseconds.
  public var description: String {
    microseconds % 1000 == 0 ? "\(microseconds / 1000)ms" : "\(Double(microseconds) / 1000)ms"
  }

  /// `value × multiplier ÷ divisor` rounded to the nearest (halves away from zero), without
  /// intermediate overflow. `what` names the value in the error, and is only built for one (this runs
  /// per packet).
  static func scale(
    _ value: Int64, by multiplier: Int64, over divisor: Int64, what: @autoclosure () -> String
  ) throws(MediaTimeOverflow) -> Int64 {
    guard divisor != 0 else { throw MediaTimeOverflow(what: "\(what()) over a zero divisor") }
    var product = Int128(value) * Int128(multiplier)
    var divisor = Int128(divisor)
    if divisor < 0 {
      divisor = -divisor
      product = -product
    }
    // |product| + divisor/2, truncated, carries the sign back: halves go away from zero.
    let half = divisor / 2
    let quotient = product >= 0 ? (product + half) / divisor : -((-product + half) / divisor)
    guard let result = Int64(exactly: quotient) else { throw MediaTimeOverflow(what: what()) }
    return result
  }

  /// `value ÷ divisor` rounded to the nearest, halves away from zero (`divisor` > 0).
  static func roundedDivide(_ value: Int64, by divisor: Int64) -> Int64 {
    let quotient = value / divisor
    let remainder = value % divisor
    if 2 * remainder.magnitude >= divisor.magnitude { return value < 0 ? quotient - 1 : quotient + 1 }
    return quotient
  }
}
