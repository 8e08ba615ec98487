/// How fast media plays: `numerator / denominator` seconds of media per second of clock.
public struct PlaybackRate: Hashable, Sendable, CustomStringConvertible {
  /// Media seconds, numerator.
  public let numerator: Int64
  /// Per clock seconds, denominator.
  public let denominator: Int64

  /// A rate of `numerator / denominator`; nil unless both are positive.
  public init?(numerator: Int64, denominator: Int64) {
    guard numerator > 0, denominator > 0 else { return nil }
    self.numerator = numerator
    self.denominator = denominator
  }

  /// Real time.
  public static let normal = PlaybackRate(numerator: 1, denominator: 1)!

  /// `1/8x`, `2x`.
  public var description: String { denominator == 1 ? "\(numerator)x" : "\(numerator)/\(denominator)x" }
}
