/// Carries a non-`Sendable` value through a `@Sendable` closure to the one thread that uses it: a job
/// on the executor the value is confined to, or a worker job the value is handed to whole.
///
/// The invariant that makes the unchecked conformance sound: at any time one thread uses the value; the
/// sender keeps no reference it would use afterwards.
package struct ExecutorConfined<Value>: @unchecked Sendable {
  /// The value carried.
  package let value: Value
  /// Wraps `value`.
  package init(_ value: Value) { self.value = value }
}
