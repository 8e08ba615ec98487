import Foundation
import Nodes

/// The states of an Audio Output (rules.md O1).
public enum TiCloudStorageAudioOutputState: Int, Sendable {
  /// Not playing yet, or detached.
  case idle = 0
  /// Waiting for media (after a play or a seek).
  case buffering = 1
  /// Playing audio (silence off `.x1`, R41).
  case playing = 2
  /// Cannot go on.
  case failed = 3
  /// The Replay is paused.
  case paused = 4
  /// The Replay's source was exhausted and the output has drained.
  case completed = 5
}

/// Hears of an Audio Output's state changes and of its own failures, on the main queue. Both methods
/// are optional.
public protocol TiCloudStorageAudioOutputDelegate: AnyObject {
  /// `output` moved to `state` (`output.state` already says so, O12).
  func audioOutput(_ output: TiCloudStorageAudioOutput, didChangeState state: TiCloudStorageAudioOutputState)
  /// `output`'s own decoding or playback failed with `code`; only it stopped (O24).
  func audioOutput(_ output: TiCloudStorageAudioOutput, didFailWithCode code: Int32)
}

extension TiCloudStorageAudioOutputDelegate {
  /// Does nothing.
  public func audioOutput(_ output: TiCloudStorageAudioOutput, didChangeState state: TiCloudStorageAudioOutputState) {}
  /// Does nothing.
  public func audioOutput(_ output: TiCloudStorageAudioOutput, didFailWithCode code: Int32) {}
}

/// The seed's `TiCloudStorageAudioOutput`: plays one audio channel of a Replay on an audio route at its
/// own volume (rules.md group O).
///
/// On Linux the audio route is an `AudioDevice` given at creation (a `NullAudioDevice` that
/// consumes in real time by default, a `CaptureAudioDevice` in tests). Methods may be called from any
/// thread and return at once; the delegate runs on the main queue.
public final class TiCloudStorageAudioOutput: @unchecked Sendable {
  let core = OutputCore(kind: .audio)
  private let device: any AudioDevice
  private weak var delegateStorage: (any TiCloudStorageAudioOutputDelegate)?

  /// Receives state changes and failures on the main queue; held weakly (O10).
  public weak var delegate: (any TiCloudStorageAudioOutputDelegate)? {
    get { Runtime.shared.withLock { delegateStorage } }
    set { Runtime.shared.withLock { delegateStorage = newValue } }
  }

  /// The current state; `.idle` for a new output (O3) and its last value after dispose (L34).
  public var state: TiCloudStorageAudioOutputState {
    Runtime.shared.withLock { TiCloudStorageAudioOutputState(rawValue: core.state.rawValue)! }
  }

  /// A new output on the null audio route; acquires nothing (L6).
  public convenience init() { self.init(device: NullAudioDevice()) }

  /// A new output playing on `device`.
  public init(device: any AudioDevice) {
    self.device = device
    core.owner = self
    core.notifyState = { [weak self] state in
      guard let self, let delegate = self.liveDelegate() else { return }
      delegate.audioOutput(self, didChangeState: TiCloudStorageAudioOutputState(rawValue: state.rawValue)!)
    }
    core.notifyFailure = { [weak self] code in
      guard let self, let delegate = self.liveDelegate() else { return }
      delegate.audioOutput(self, didFailWithCode: code)
    }
  }

  private func liveDelegate() -> (any TiCloudStorageAudioOutputDelegate)? {
    Runtime.shared.withLock { core.disposed ? nil : delegateStorage }
  }

  /// Binds the audio of `channelId` in `replay` (O13–O18).
  public func attach(replay: TiCloudStorageReplay, channelId: UInt8) -> Int32 {
    let device = self.device
    return core.attach(to: replay, channel: channelId) { _ in .audio(device) }
  }

  /// Sets this output's volume, 0...100 (0 mutes), before or after `attach`, kept across plays and
  /// bindings (O29, O31–O33); invalidArgument above 100, the volume unchanged (O30).
  public func setVolume(_ volumePercent: UInt32) -> Int32 {
    let runtime = Runtime.shared
    let outcome = runtime.withLock { () -> (Int32, (Replay, Replay.OutputID)?) in
      let code = core.admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil) }
      guard volumePercent <= 100 else { return (TiCloudStorageErrorCode.invalidArgument, nil) }
      core.volume = Int(volumePercent)
      guard let binding = core.binding, let id = binding.engineID else { return (code, nil) }
      return (code, (binding.replay.engineIfNeeded(), id))
    }
    if let (engine, id) = outcome.1 { engine.setVolume(Int(volumePercent), of: id) }
    return outcome.0
  }

  /// Unbinds from the Replay and moves to `.idle` (O19).
  public func detach() -> Int32 { core.detach() }

  /// Releases the output: inUse while bound (O22); afterwards its methods return notInitialized (O23).
  public func dispose() -> Int32 { core.dispose() }
}
