/// Carries a non-Sendable closure of the caller's into a callback that runs on the queue the caller
/// chose (the seed's callbacks are plain closures).
struct UncheckedBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}
