/// A one-way door from any thread back onto a node's executor, created by
/// ``NodeContext/makeCompletion(_:)``.
///
/// Calling it submits the node's handler to the node's executor. The call is dropped when the pipeline
/// has flushed since the completion was made (a stale generation) or has stopped, so a download that
/// finishes after a seek can never deliver old data.
///
/// A value with no states of its own: call it from any thread, any number of times.
public struct Completion<Value: Sendable>: Sendable {
  let deliver: @Sendable (Value) -> Void

  /// Delivers `value` to the node's handler on the node's executor. Callable from any thread, any
  /// number of times.
  public func callAsFunction(_ value: Value) { deliver(value) }
}
