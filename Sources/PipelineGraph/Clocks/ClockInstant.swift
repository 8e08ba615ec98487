/// A point on a pipeline clock's timeline, in microseconds since the clock's origin.
public struct ClockInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// Microseconds since the clock's origin.
  public var microseconds: Int64

  /// Creates an instant `microseconds` after the clock's origin.
  public init(microseconds: Int64) { self.microseconds = microseconds }

  /// The clock's origin.
  public static let zero = ClockInstant(microseconds: 0)

  /// Orders instants in time.
  public static func < (lhs: ClockInstant, rhs: ClockInstant) -> Bool { lhs.microseconds < rhs.microseconds }

  /// The instant `duration` later (microsecond precision).
  public static func + (lhs: ClockInstant, rhs: Duration) -> ClockInstant {
    ClockInstant(microseconds: lhs.microseconds + rhs.microseconds)
  }

  /// `t+<µs>µs`.
  public var description: String { "t+\(microseconds)µs" }
}

extension Duration {
  /// The duration in whole microseconds, rounded toward zero.
  public var microseconds: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
  }
}
