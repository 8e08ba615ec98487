import Foundation
import Nodes
import PipelineGraph

/// The calendar days of a `listRecordingDays` query: strict `YYYY-MM-DD` dates, inclusive, each split at
/// its local midnights in an IANA time zone (a DST day lasts 23 or 25 hours).
struct CalendarDays {
  /// Each day and its span, ascending.
  var days: [(date: String, span: MediaRange)]

  /// The most days one query may cover (rules.md Q25).
  static let maximumCount = 31

  /// The tz database's zone ids.
  private static let ianaIdentifiers = Set(TimeZone.knownTimeZoneIdentifiers)

  /// The days from `startDate` to `endDate`; `invalidArgument` for a malformed or impossible date, an
  /// unknown time zone or a start after the end, `rangeTooLarge` beyond 31 days.
  init(from startDate: String, to endDate: String, timeZoneId: String) throws {
    // Foundation also reads offsets and abbreviations (`UTC+8`, `GMT+8`, `CST`, which is three zones):
    // only the tz database's ids are taken (Q24): its zones, `UTC`, `GMT` and the fixed `Etc/…` ones
    // (`Etc/GMT-8`), which Foundation's list leaves out.
    guard
      Self.ianaIdentifiers.contains(timeZoneId) || ["UTC", "GMT"].contains(timeZoneId)
        || timeZoneId.hasPrefix("Etc/"),
      let zone = TimeZone(identifier: timeZoneId)
    else {
      throw TiError(.invalidArgument, "'\(timeZoneId.prefix(64))' is not an IANA time-zone id (such as Asia/Shanghai)")
    }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let first = try Self.noon(of: startDate, calendar)
    let last = try Self.noon(of: endDate, calendar)
    guard first <= last else { throw TiError(.invalidArgument, "startDate \(startDate) is after endDate \(endDate)") }
    var days: [(date: String, span: MediaRange)] = []
    var noon = first
    while noon <= last {
      guard days.count < Self.maximumCount else {
        throw TiError(.rangeTooLarge, "a query covers at most \(Self.maximumCount) days")
      }
      guard let next = calendar.date(byAdding: .day, value: 1, to: noon) else {
        throw TiError(.invalidArgument, "\(endDate) is outside the calendar")
      }
      let start = Self.milliseconds(calendar.startOfDay(for: noon))
      let end = Self.milliseconds(calendar.startOfDay(for: next))
      days.append((Self.format(noon, calendar), MediaRange(startMilliseconds: start, endMilliseconds: end)))
      noon = next
    }
    self.days = days
  }

  /// Noon of a strict `YYYY-MM-DD` date (noon always exists, whatever the zone's transitions).
  private static func noon(of text: String, _ calendar: Calendar) throws -> Date {
    let bytes = Array(text.utf8)
    let digits = [0, 1, 2, 3, 5, 6, 8, 9]
    guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
      digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) }),
      let year = Int(text.prefix(4)), let month = Int(text.dropFirst(5).prefix(2)), let day = Int(text.suffix(2)),
      year >= 1, (1...12).contains(month), (1...31).contains(day)
    else { throw TiError(.invalidArgument, "'\(text.prefix(32))' is not a YYYY-MM-DD date") }
    let components = DateComponents(year: year, month: month, day: day, hour: 12)
    guard let date = calendar.date(from: components),
      calendar.component(.year, from: date) == year, calendar.component(.month, from: date) == month,
      calendar.component(.day, from: date) == day
    else { throw TiError(.invalidArgument, "\(text) is not a day of the calendar") }
    return date
  }

  private static func format(_ date: Date, _ calendar: Calendar) -> String {
    let parts = calendar.dateComponents([.year, .month, .day], from: date)
    return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
  }

  private static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
