import Foundation
import Nodes

/// The binding rules both Outputs follow (rules.md O13–O23, O38), over an ``OutputCore``.
extension OutputCore {
  /// `attach(replay:channelId:)`: ok when bound (or already bound so, O14); inUse when bound elsewhere
  /// (O15) or when another Output of the kind holds that channel of the Replay (O16).
  func attach(to replay: TiCloudStorageReplay, channel: UInt8, target: @escaping (OutputCore) -> Replay.OutputTarget)
    -> Int32
  {
    let runtime = Runtime.shared
    let outcome = runtime.withLock { () -> (Int32, Replay?, [@Sendable () -> Void]) in
      var code = admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil, []) }
      code = replay.admit()
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil, []) }
      if let binding {
        let same = binding.replay === replay && binding.channel == channel
        return (same ? TiCloudStorageErrorCode.ok : TiCloudStorageErrorCode.inUse, nil, [])
      }
      guard !replay.outputs.contains(where: { $0.kind == kind && $0.binding?.channel == channel }) else {
        return (TiCloudStorageErrorCode.inUse, nil, [])
      }
      binding = Binding(replay: replay, channel: channel)
      replay.outputs.append(self)
      presenting = false
      forgetFrame()
      let call = replay.hasActivePlay ? move(to: .buffering) : nil
      return (TiCloudStorageErrorCode.ok, replay.engineIfNeeded(), call.map { [$0] } ?? [])
    }
    guard outcome.0 == TiCloudStorageErrorCode.ok, let engine = outcome.1 else { return outcome.0 }
    let events: @Sendable (Replay.OutputEvent) -> Void = { [weak self] event in self?.engineEvent(event) }
    let volume = runtime.withLock { self.volume }
    let id = engine.bind(channel: channel, target: target(self), volume: volume, events: events)
    runtime.withLock { if binding?.replay === replay { binding?.engineID = id } }
    deliverOnMain(outcome.2, for: [owner].compactMap { $0 } + [replay])
    return TiCloudStorageErrorCode.ok
  }

  /// `detach()`: unbinds and moves to `.idle` (O4, O19); ok when not bound (O20); inUse inside a
  /// callback of the Output or its Replay (L24).
  func detach() -> Int32 {
    let runtime = Runtime.shared
    let outcome = runtime.withLock { () -> (Int32, (Replay, Replay.OutputID)?, [@Sendable () -> Void], [AnyObject]) in
      let code = admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil, [], []) }
      guard let binding else { return (TiCloudStorageErrorCode.ok, nil, [], []) }
      let associated = binding.replay.associated()
      guard !runtime.insideCallback(of: associated) else { return (TiCloudStorageErrorCode.inUse, nil, [], []) }
      self.binding = nil
      binding.replay.outputs.removeAll { $0 === self }
      presenting = false
      forgetFrame()
      // Without a binding the output has no picture: its render size is zero again.
      let calls = [move(to: .idle), resize(to: .zero)].compactMap { $0 }
      let engine = binding.replay.engineIfNeeded()
      return (TiCloudStorageErrorCode.ok, binding.engineID.map { (engine, $0) }, calls, associated)
    }
    if let (engine, id) = outcome.1 { engine.unbind(id) }
    deliverOnMain(outcome.2, for: outcome.3)
    return outcome.0
  }

  /// `dispose()`: inUse while bound to a Replay or a host view, with a snapshot pending, or inside its
  /// own callback (O22, S11, L24); ok otherwise and when already disposed (O23, L32).
  func dispose() -> Int32 {
    let runtime = Runtime.shared
    return runtime.withLock {
      guard !disposed else { return TiCloudStorageErrorCode.ok }
      guard let owner else { return TiCloudStorageErrorCode.ok }
      guard binding == nil, !hasView, !snapshotPending, !runtime.insideCallback(of: [owner]) else {
        return TiCloudStorageErrorCode.inUse
      }
      disposed = true
      runtime.release(owner)
      return TiCloudStorageErrorCode.ok
    }
  }

  /// What the engine says of this output's branch (on the graph's thread).
  private func engineEvent(_ event: Replay.OutputEvent) {
    let runtime = Runtime.shared
    let outcome = runtime.withLock { () -> ([@Sendable () -> Void], [AnyObject]) in
      guard let binding, !disposed else { return ([], []) }
      var calls: [@Sendable () -> Void] = []
      switch event {
      case .presenting:
        presenting = true
        if state == .buffering, let call = move(to: .active) { calls.append(call) }
        // Off 1× audio is muted and presents nothing: its outputs play silence (R41).
        if kind == .video, binding.replay.speedLocked != .x1 {
          for output in binding.replay.outputs where output.kind == .audio && output.state == .buffering {
            output.presenting = true
            if let call = output.move(to: .active) { calls.append(call) }
          }
        }
      case .completed:
        if state != .failed, let call = move(to: .completed) { calls.append(call) }
      case .failed(let error):
        if let call = move(to: .failed) { calls.append(call) }
        if let notify = notifyFailure { calls.append { notify(error.code.rawValue) } }
      }
      return (calls, binding.replay.associated())
    }
    deliverOnMain(outcome.0, for: outcome.1)
  }
}
