/// A time or duration that does not fit in `Int64` microseconds: the values it was computed from came
/// from outside and are absurd. Never a trap.
public struct MediaTimeOverflow: Error, Hashable, Sendable, CustomStringConvertible {
  /// What was being computed.
  public let what: String

  /// `what` does not fit.
  public var description: String { "\(what) is outside the representable time (±292,000 years)" }

  static func check(_ result: (partialValue: Int64, overflow: Bool), _ what: @autoclosure () -> String)
    throws(MediaTimeOverflow) -> Int64
  {
    if result.overflow { throw MediaTimeOverflow(what: what()) }
    return result.partialValue
  }
}
