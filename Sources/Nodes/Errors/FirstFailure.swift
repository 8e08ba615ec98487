/// Runs steps that must all be tried whatever one of them throws (the packets a decoder kept, the
/// frames it still holds), keeping the first failure to throw after the last step.
struct FirstFailure {
  private var first: (any Error)?

  /// Runs `step`; true when it did not throw.
  @discardableResult
  mutating func run(_ step: () throws -> Void) -> Bool {
    do {
      try step()
      return true
    } catch {
      first = first ?? error
      return false
    }
  }

  /// Throws the first failure, if any.
  func rethrow() throws {
    if let first { throw first }
  }
}
