/// One calendar day of `listRecordingDays`: whether any recording touches it in the query's time zone.
public struct RecordingDay: Sendable, Hashable {
  /// The day, `YYYY-MM-DD`.
  public var date: String
  /// True when some recording covers at least one instant between the day's local midnights.
  public var hasRecording: Bool

  /// Creates a day.
  public init(date: String, hasRecording: Bool) {
    self.date = date
    self.hasRecording = hasRecording
  }
}
