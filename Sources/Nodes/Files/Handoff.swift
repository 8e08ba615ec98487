/// A value handed whole from a node to a worker job: the node keeps no reference, so the worker is its
/// only user (which is why it may cross threads without being `Sendable`).
final class Handoff<Value>: @unchecked Sendable {
  /// The value handed off.
  let value: Value

  /// Wraps `value`; the caller must drop every other reference to it.
  init(_ value: Value) { self.value = value }
}
