/// A half-open stretch of recording time `[start, end)`.
public struct MediaRange: Hashable, Sendable, Codable, CustomStringConvertible {
  /// First instant covered.
  public var start: MediaTime
  /// End of coverage, exclusive.
  public var end: MediaTime

  /// Creates `[start, end)`.
  public init(start: MediaTime, end: MediaTime) {
    self.start = start
    self.end = end
  }

  /// Creates `[start, end)` from UTC milliseconds (each in ``MediaTime/validMilliseconds``).
  public init(startMilliseconds: Int64, endMilliseconds: Int64) {
    self.init(start: MediaTime(milliseconds: startMilliseconds), end: MediaTime(milliseconds: endMilliseconds))
  }

  /// The length (zero when `end` is not after `start`); ranges of valid times always fit.
  public var duration: MediaDuration {
    let (difference, overflow) = end.microseconds.subtractingReportingOverflow(start.microseconds)
    return .microseconds(overflow ? .max : max(0, difference))
  }

  /// True when the range holds no instant.
  public var isEmpty: Bool { end <= start }

  /// True when the two ranges share an instant.
  public func overlaps(_ other: MediaRange) -> Bool { start < other.end && other.start < end }

  /// True when `time` is inside.
  public func contains(_ time: MediaTime) -> Bool { start <= time && time < end }

  /// The instants both ranges hold, or nil.
  public func clamped(to other: MediaRange) -> MediaRange? {
    let clipped = MediaRange(start: max(start, other.start), end: min(end, other.end))
    return clipped.isEmpty ? nil : clipped
  }

  /// The range from `time` to the same end, earlier or later than ``start`` (a seek); empty when `time`
  /// is not before ``end``.
  public func starting(at time: MediaTime) -> MediaRange { MediaRange(start: min(time, end), end: end) }

  /// `[start, end)`.
  public var description: String { "[\(start.milliseconds), \(end.milliseconds))" }
}
