import PipelineGraph

/// What a server made lately on request (a preview sheet, a stream segment), kept for the requests that
/// ask for it again, and a bound on how much is made at once: a request beyond it — or for a value being
/// made right now — is answered `busy` at once, to retry (it must not hold one of the server's few
/// threads, nor make the same value twice). Thread-safe.
final class RecentlyMade<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  private let capacity: Int
  private let byteLimit: Int
  private let bytes: @Sendable (Value) -> Int
  private let makers: Int
  private let busy: RequestHandler.NotServed
  private let state = Locked<(making: Set<Key>, kept: [(Key, Value)])>(([], []))

  /// Keeps the last `capacity` values (and, beyond the newest, at most `byteLimit` bytes of them as
  /// `bytes` counts), makes up to `makers` at once, and answers `busy` beyond.
  init(
    capacity: Int, makers: Int, byteLimit: Int = .max, bytes: @escaping @Sendable (Value) -> Int = { _ in 0 },
    busy: RequestHandler.NotServed
  ) {
    self.capacity = capacity
    self.makers = makers
    self.byteLimit = byteLimit
    self.bytes = bytes
    self.busy = busy
  }

  /// The kept value of `key`, or the one `make` makes now.
  func value(
    for key: Key, making make: () throws(RequestHandler.NotServed) -> Value
  ) -> Result<Value, RequestHandler.NotServed> {
    let claimed = state.withLock { state -> Result<Value, RequestHandler.NotServed>? in
      if let kept = state.kept.first(where: { $0.0 == key }) { return .success(kept.1) }
      guard state.making.count < makers, !state.making.contains(key) else { return .failure(busy) }
      state.making.insert(key)
      return nil
    }
    if let claimed { return claimed }
    let made = Result { () throws(RequestHandler.NotServed) in try make() }
    state.withLock { state in
      state.making.remove(key)
      guard case .success(let value) = made else { return }
      state.kept.append((key, value))
      while state.kept.count > capacity
        || state.kept.count > 1 && state.kept.reduce(0, { $0 + bytes($1.1) }) > byteLimit
      {
        state.kept.removeFirst()
      }
    }
    return made
  }
}
