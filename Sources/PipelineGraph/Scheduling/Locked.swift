import Glibc

/// A value guarded by a ``Lock``.
final class Locked<Value>: @unchecked Sendable {
  private let lock = Lock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    try lock.withLock { try body(&value) }
  }
}
