extension String {
  /// The text on one line, safe to write to a log or a terminal: control characters (newlines, escape,
  /// DEL, C1) and line or paragraph separators become `\n`, `\r`, `\t` or `\u{…}`, so what a client or
  /// an argument sent can neither forge a line nor drive a terminal.
  package var oneLine: String {
    var result = ""
    for scalar in unicodeScalars {
      switch scalar {
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case _
      where [.control, .lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory):
        result += "\\u{\(String(scalar.value, radix: 16))}"
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result
  }
}
