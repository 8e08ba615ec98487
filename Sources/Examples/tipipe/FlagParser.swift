import Foundation
import Nodes
import PipelineGraph

/// Reads `--flag value`, repeated `--flag value` and boolean `--flag`, rejecting unknown flags and bad
/// values with a ``UsageError``.
struct FlagParser {
  enum Kind {
    case value, repeated, boolean
  }

  private var values: [String: [String]] = [:]
  private var present: Set<String> = []

  init(_ arguments: [String], known: [String: Kind]) throws {
    var index = 0
    while index < arguments.count {
      let flag = arguments[index]
      guard let kind = known[flag] else { throw UsageError(message: "unknown flag '\(flag)'") }
      present.insert(flag)
      if kind == .boolean {
        index += 1
        continue
      }
      guard index + 1 < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
      if kind == .value && values[flag] != nil { throw UsageError(message: "\(flag) given twice") }
      values[flag, default: []].append(arguments[index + 1])
      index += 2
    }
  }

  func has(_ flag: String) -> Bool { present.contains(flag) }

  func string(_ flag: String) -> String? { values[flag]?.last }

  func all(_ flag: String) -> [String] { values[flag] ?? [] }

  func required(_ flag: String) throws -> String {
    guard let value = string(flag) else { throw UsageError(message: "\(flag) is required") }
    return value
  }

  func integer(_ flag: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
    guard let text = string(flag) else { return value }
    guard let number = Int(text), range.contains(number) else {
      throw UsageError(message: "\(flag) must be an integer in \(range.lowerBound)...\(range.upperBound)")
    }
    return number
  }

  /// A time: UTC Unix milliseconds or ISO-8601 with a zone (`spec/cli.md`).
  func time(_ flag: String) throws -> Int64? {
    guard let text = string(flag) else { return nil }
    guard let milliseconds = Self.parseTime(text) else {
      throw UsageError(
        message:
          "\(flag) must be UTC milliseconds or ISO-8601 with a zone, within ±146,000 years of 1970, not '\(text)'")
    }
    return milliseconds
  }

  /// Milliseconds inside ``MediaTime/validMilliseconds``, or nil.
  static func parseTime(_ text: String) -> Int64? {
    guard let milliseconds = parseAnyTime(text), MediaTime.validMilliseconds.contains(milliseconds) else { return nil }
    return milliseconds
  }

  private static func parseAnyTime(_ text: String) -> Int64? {
    if let milliseconds = Int64(text) { return milliseconds }
    let formatter = ISO8601DateFormatter()
    for options: ISO8601DateFormatter.Options in [
      [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
    ] {
      formatter.formatOptions = options
      if let date = formatter.date(from: text) { return Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded()) }
    }
    return nil
  }
}
