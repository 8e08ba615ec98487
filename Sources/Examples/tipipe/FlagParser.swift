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

  /// Flags whose values are secrets: each also comes from `<flag>-file` (the file's content, a final
  /// newline dropped) or, when neither is given, from an environment variable; given on the command
  /// line, where every local user can read it (`ps`), it works, with a warning when standard error is a
  /// terminal.
  static let secretFlags = ["--token": "TIPIPE_TOKEN", "--secret": "TIPIPE_SECRET"]

  init(
    _ arguments: [String], known: [String: Kind], environment: [String: String] = ProcessInfo.processInfo.environment
  )
    throws
  {
    var known = known
    for flag in Self.secretFlags.keys where known[flag] != nil { known[flag + "-file"] = .value }
    try parse(arguments, known: known)
    for (flag, variable) in Self.secretFlags where known[flag] != nil {
      if let path = values[flag + "-file"]?.last {
        guard values[flag] == nil else { throw UsageError(message: "give \(flag) or \(flag)-file, not both") }
        values[flag] = [try Self.readSecret(path, flag: flag + "-file")]
        present.insert(flag)
      } else if values[flag] != nil {
        // Told to a person at a terminal; a script's standard error keeps its one line per failure
        // (spec/cli.md).
        guard isatty(2) != 0 else { continue }
        StandardError.write(
          Data(
            ("warning: \(flag) on the command line is visible to every local user (ps); "
              + "use \(flag)-file or \(variable)\n").utf8))
      } else if let value = environment[variable], !value.isEmpty {
        values[flag] = [value]
        present.insert(flag)
      }
    }
  }

  /// A secret kept in a file: a regular file of at most 64 KiB, its one line without the newline. Read
  /// with POSIX calls: a FIFO is refused before it can block, and nothing is left allocated when the
  /// usage error ends the process.
  private static func readSecret(_ path: String, flag: String) throws -> String {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard descriptor >= 0 else { throw UsageError(message: "\(flag) \(path.oneLine) cannot be opened") }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw UsageError(message: "\(flag) \(path.oneLine) is not a readable regular file")
    }
    var bytes = [UInt8](repeating: 0, count: 65_537)
    var count = 0
    while count < bytes.count {
      let read = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress! + count, $0.count - count) }
      guard read > 0 else { break }
      count += read
    }
    guard count <= 65_536 else { throw UsageError(message: "\(flag) \(path.oneLine) holds more than 64 KiB") }
    var text = String(decoding: bytes[..<count], as: UTF8.self)
    while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
    guard !text.isEmpty, !text.contains(where: { $0.isNewline }) else {
      throw UsageError(message: "\(flag) \(path.oneLine) must hold one non-empty line")
    }
    return text
  }

  private mutating func parse(_ arguments: [String], known: [String: Kind]) throws {
    var index = 0
    while index < arguments.count {
      let flag = arguments[index]
      guard let kind = known[flag] else {
        guard flag.hasPrefix("-") else {
          throw UsageError(message: "unexpected argument '\(flag)' (every value follows its flag)")
        }
        throw UsageError(message: "unknown flag '\(flag)'")
      }
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

  /// A flag's value that must be given, and not empty (an empty token, endpoint or path is a bad value:
  /// the run would fail later with a code that does not say which).
  func required(_ flag: String) throws -> String {
    guard let value = string(flag) else { throw UsageError(message: "\(flag) is required") }
    guard !value.isEmpty else { throw UsageError(message: "\(flag) is empty") }
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
    return parseISO8601(text)
  }

  /// RFC 3339 (`2026-11-30T08:00:00.250+08:00`, `…Z`), strictly: every field in its range (a real day
  /// of its month, offsets up to ±23:59), up to nine fraction digits rounded to the nearest millisecond
  /// (halves away from zero), nothing before or after. Foundation's parser took `+1:00` for +10:00,
  /// `+25:00` for +02:00, trailing junk and 31 November.
  static func parseISO8601(_ text: String) -> Int64? {
    let bytes = Array(text.utf8)
    var index = 0
    func number(_ digits: Int) -> Int64? {
      guard index + digits <= bytes.count else { return nil }
      var value: Int64 = 0
      for byte in bytes[index..<index + digits] {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        value = value * 10 + Int64(byte - UInt8(ascii: "0"))
      }
      index += digits
      return value
    }
    func expect(_ characters: String) -> Bool {
      guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
      index += 1
      return true
    }
    guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
      expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
    else { return nil }
    var fraction: Int64 = 0
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      var digits = 0
      var nanoseconds: Int64 = 0
      while digits < 10, let digit = number(1) {
        digits += 1
        guard digits <= 9 else { return nil }
        nanoseconds = nanoseconds * 10 + digit
      }
      guard digits > 0 else { return nil }
      for _ in digits..<9 { nanoseconds *= 10 }
      fraction = (nanoseconds + 500_000) / 1_000_000
    }
    var offsetMinutes: Int64 = 0
    if expect("Zz") {
    } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
      let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
      index += 1
      guard let hours = number(2), expect(":"), let minutes = number(2), hours <= 23, minutes <= 59 else { return nil }
      offsetMinutes = sign * (hours * 60 + minutes)
    } else {
      return nil
    }
    guard index == bytes.count, (1...12).contains(month), hour <= 23, minute <= 59, second <= 59 else { return nil }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    let lengths: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    guard (1...lengths[Int(month) - 1]).contains(day) else { return nil }
    // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse, H. Hinnant).
    let shifted = month <= 2 ? year - 1 : year
    let era = (shifted >= 0 ? shifted : shifted - 399) / 400
    let yearOfEra = shifted - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offsetMinutes * 60
    return seconds * 1000 + fraction
  }
}
