/// A point in recording time: UTC microseconds since the Unix epoch.
///
/// Inside the graph every time is a `MediaTime`; the seed's milliseconds exist only at the API edge.
public struct MediaTime: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  /// UTC microseconds since 1970-01-01T00:00:00Z.
  public var microseconds: Int64

  /// Creates a time from UTC microseconds.
  public init(microseconds: Int64) { self.microseconds = microseconds }

  /// Creates a time from UTC milliseconds (the segment format's unit).
  ///
  /// - Precondition: `milliseconds` is in ``validMilliseconds``; values from outside the process
  ///   (arguments, indexes, segment headers) are checked with ``init(checkedMilliseconds:)`` first.
  public init(milliseconds: Int64) { microseconds = milliseconds * 1000 }

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

  /// The time in whole UTC milliseconds, rounded down.
  public var milliseconds: Int64 {
    microseconds >= 0 ? microseconds / 1000 : (microseconds - 999) / 1000
  }

  /// Orders times.
  public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool { lhs.microseconds < rhs.microseconds }

  /// `<ms>ms`.
  public var description: String { "\(milliseconds)ms" }
}

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

  /// Creates `[start, end)` from UTC milliseconds.
  public init(startMilliseconds: Int64, endMilliseconds: Int64) {
    self.init(start: MediaTime(milliseconds: startMilliseconds), end: MediaTime(milliseconds: endMilliseconds))
  }

  /// The length in microseconds.
  public var durationMicroseconds: Int64 { end.microseconds - start.microseconds }

  /// True when the two ranges share an instant.
  public func overlaps(_ other: MediaRange) -> Bool { start < other.end && other.start < end }

  /// `[start, end)`.
  public var description: String { "[\(start.milliseconds), \(end.milliseconds))" }
}
