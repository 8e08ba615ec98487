/// A bad command line: reported as one line on stderr with exit status 2.
struct UsageError: Error {
  var message: String
}

/// Reads `--flag value` pairs, rejecting unknown flags and bad values.
struct FlagParser {
  private var values: [String: String] = [:]

  init(_ arguments: [String], known: Set<String>) throws {
    var index = 0
    while index < arguments.count {
      let flag = arguments[index]
      guard flag.hasPrefix("--"), known.contains(flag) else { throw UsageError(message: "unknown flag '\(flag)'") }
      guard index + 1 < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
      values[flag] = arguments[index + 1]
      index += 2
    }
  }

  func integer(_ flag: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
    guard let text = values[flag] else { return value }
    guard let number = Int(text), range.contains(number) else {
      throw UsageError(message: "\(flag) must be an integer in \(range.lowerBound)...\(range.upperBound)")
    }
    return number
  }
}
