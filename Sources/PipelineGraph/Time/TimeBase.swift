/// A stream's unit of time: `numerator / denominator` seconds per tick (libavformat's `time_base`).
public struct TimeBase: Hashable, Sendable, CustomStringConvertible {
  /// Seconds per tick, numerator.
  public let numerator: Int32
  /// Seconds per tick, denominator.
  public let denominator: Int32

  /// A time base of `numerator / denominator` seconds; nil unless both are positive.
  public init?(numerator: Int32, denominator: Int32) {
    guard numerator > 0, denominator > 0 else { return nil }
    self.numerator = numerator
    self.denominator = denominator
  }

  /// `1/90000`.
  public var description: String { "\(numerator)/\(denominator)" }
}
