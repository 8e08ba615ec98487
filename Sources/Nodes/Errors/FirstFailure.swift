/// Runs steps that must all be tried whatever one of them throws (the packets a decoder kept, the
/// frames it still holds), keeping the failure to throw after the last step: the first, unless a later
/// one is worse than a damaged packet (`unreadableMedia`, which a flow may resume after) — a failure
/// that must end the flow is never hidden behind one it would go on after.
struct FirstFailure {
  private var kept: (any Error)?

  /// Runs `step`; true when it did not throw.
  @discardableResult
  mutating func run(_ step: () throws -> Void) -> Bool {
    do {
      try step()
      return true
    } catch {
      if kept == nil || (Self.isDamagedPacket(kept) && !Self.isDamagedPacket(error)) { kept = error }
      return false
    }
  }

  /// Throws the failure kept, if any.
  func rethrow() throws {
    if let kept { throw kept }
  }

  private static func isDamagedPacket(_ error: (any Error)?) -> Bool {
    (error as? MediaError)?.kind == .unreadableMedia
  }
}
