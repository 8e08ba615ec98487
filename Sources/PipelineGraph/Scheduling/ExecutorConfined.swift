/// Carries a non-`Sendable` value to a job that runs on the executor the value is confined to.
///
/// The invariant that makes the unchecked conformance sound: the value is created on, and only ever
/// used on, one executor; the wrapper only moves it through a `@Sendable` closure's capture list.
struct ExecutorConfined<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}
