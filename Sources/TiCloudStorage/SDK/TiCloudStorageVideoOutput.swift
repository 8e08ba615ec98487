import Foundation
import Nodes

/// The states of a Video Output (rules.md O2).
public enum TiCloudStorageVideoOutputState: Int, Sendable {
  /// Not rendering yet, or detached.
  case idle = 0
  /// Waiting for media (after a play or a seek).
  case buffering = 1
  /// Rendering video.
  case rendering = 2
  /// Cannot go on.
  case failed = 3
  /// The Replay is paused.
  case paused = 4
  /// The Replay's source was exhausted and the output has drained.
  case completed = 5
}

/// Hears of a Video Output's state changes, of its render size changes and of its own failures, on the
/// main queue. Every method is optional.
public protocol TiCloudStorageVideoOutputDelegate: AnyObject {
  /// `output` moved to `state` (`output.state` already says so, O12).
  func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeState state: TiCloudStorageVideoOutputState)
  /// `output` presented a picture of another size than the last one, or was detached (`.zero`);
  /// ``TiCloudStorageVideoOutput/renderSize`` was set to `size` first (a later change may have followed
  /// by the time this runs). Once per change, in order. From seed 002's `TiRtcVideoOutput`.
  func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeRenderSize size: CGSize)
  /// `output`'s own decoding or rendering failed with `code`; only it stopped (O24).
  func videoOutput(_ output: TiCloudStorageVideoOutput, didFailWithCode code: Int32)
}

extension TiCloudStorageVideoOutputDelegate {
  /// Does nothing.
  public func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeState state: TiCloudStorageVideoOutputState) {}
  /// Does nothing.
  public func videoOutput(_ output: TiCloudStorageVideoOutput, didChangeRenderSize size: CGSize) {}
  /// Does nothing.
  public func videoOutput(_ output: TiCloudStorageVideoOutput, didFailWithCode code: Int32) {}
}

/// The seed's `TiCloudStorageVideoOutput`: renders one video channel of a Replay into a host view and
/// takes snapshots of what it presents (rules.md groups O and S).
///
/// On Linux the host view (`TiRtcPlatformView` in the seed) is any `VideoRenderer`: a window, a
/// `FrameCaptureRenderer`, a `NullRenderer`. Methods may be called from any thread and return at
/// once; the delegate and the snapshot completion run on the main queue.
public final class TiCloudStorageVideoOutput: @unchecked Sendable {
  let core = OutputCore(kind: .video)
  private weak var delegateStorage: (any TiCloudStorageVideoOutputDelegate)?

  /// Receives state changes and failures on the main queue; held weakly (O10).
  public weak var delegate: (any TiCloudStorageVideoOutputDelegate)? {
    get { Runtime.shared.withLock { delegateStorage } }
    set { Runtime.shared.withLock { delegateStorage = newValue } }
  }

  /// The current state; `.idle` for a new output (O3) and its last value after dispose (L34).
  public var state: TiCloudStorageVideoOutputState {
    Runtime.shared.withLock { TiCloudStorageVideoOutputState(rawValue: core.state.rawValue)! }
  }

  /// The size in pixels of the last picture this output presented, with or without a host view (O39);
  /// `.zero` before its first picture and after ``detach()``. It changes as the recording's resolution
  /// does, and ``TiCloudStorageVideoOutputDelegate/videoOutput(_:didChangeRenderSize:)`` follows
  /// each change. Kept across plays and seeks of the same binding, and after dispose. (Seed 002's
  /// `renderSize`.)
  public var renderSize: CGSize { core.renderSize }

  /// A new output: idle, unbound, without a view; acquires nothing (L6).
  public init() {
    core.owner = self
    core.notifyState = { [weak self] state in
      guard let self, let delegate = self.liveDelegate() else { return }
      delegate.videoOutput(self, didChangeState: TiCloudStorageVideoOutputState(rawValue: state.rawValue)!)
    }
    core.notifyRenderSize = { [weak self] size in
      guard let self, let delegate = self.liveDelegate() else { return }
      delegate.videoOutput(self, didChangeRenderSize: size)
    }
    core.notifyFailure = { [weak self] code in
      guard let self, let delegate = self.liveDelegate() else { return }
      delegate.videoOutput(self, didFailWithCode: code)
    }
  }

  /// The delegate, unless the output was disposed (L35).
  private func liveDelegate() -> (any TiCloudStorageVideoOutputDelegate)? {
    Runtime.shared.withLock { core.disposed ? nil : delegateStorage }
  }

  /// Draws into `view` from now on: ok, also when it is already bound (O34); inUse while another view
  /// is bound (O35). Independent of the Replay binding (O38).
  public func attachView(_ view: any VideoRenderer) -> Int32 {
    let runtime = Runtime.shared
    return runtime.withLock {
      let code = core.admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return code }
      if let bound = core.hostView {
        return bound === view ? TiCloudStorageErrorCode.ok : TiCloudStorageErrorCode.inUse
      }
      core.setView(view)
      return TiCloudStorageErrorCode.ok
    }
  }

  /// Stops drawing into the view: once this returns, nothing more is drawn into it (O36, O37); ok when
  /// none is bound (O20). Snapshots return noFrame until a new frame arrives (S7). inUse inside a
  /// callback of the output or its Replay (L24).
  public func detachView() -> Int32 {
    let runtime = Runtime.shared
    return runtime.withLock {
      let code = core.admit(runtime)
      guard code == TiCloudStorageErrorCode.ok else { return code }
      let associated = core.binding?.replay.associated() ?? [self]
      guard !runtime.insideCallback(of: associated) else { return TiCloudStorageErrorCode.inUse }
      guard core.hasView else { return TiCloudStorageErrorCode.ok }
      core.setView(nil)
      core.forgetFrame()
      return TiCloudStorageErrorCode.ok
    }
  }

  /// Binds the video of `channelId` in `replay` (O13–O18): while a play runs, rendering starts at the
  /// next keyframe.
  public func attach(replay: TiCloudStorageReplay, channelId: UInt8) -> Int32 {
    core.attach(to: replay, channel: channelId) { core in .video(OutputRenderer(core: core)) }
  }

  /// Unbinds from the Replay and moves to `.idle`; the view stays (O19).
  public func detach() -> Int32 { core.detach() }

  /// Releases the output: inUse while bound, with a view or a pending snapshot (O22, S11); afterwards
  /// its methods return notInitialized (O23).
  public func dispose() -> Int32 { core.dispose() }

  /// Saves the frame presented now as a new JPEG in the SDK cache directory (S1, S2); see
  /// ``takeSnapshot(completion:)`` for the codes.
  public func takeSnapshot() async -> TiCloudStorageSnapshotResult {
    await withCheckedContinuation { continuation in
      startSnapshot { continuation.resume(returning: $0) }
    }
  }

  /// Saves the frame presented now; `completion` runs once on the main queue (S3) with ok and the file,
  /// noFrame when the binding generation has presented nothing (S4, S7), inUse while another snapshot of
  /// this output is pending (S9), resourceExhausted beyond ``TiCloudStorage/maximumConcurrentSnapshots``
  /// (S10), fileWriteFailed when the JPEG cannot be written (S13).
  public func takeSnapshot(completion: @escaping @MainActor @Sendable (TiCloudStorageSnapshotResult) -> Void) {
    startSnapshot { result in
      Runtime.shared.deliver(on: .main, for: []) { MainActor.assumeIsolated { completion(result) } }
    }
  }
}

/// The renderer a Video Output's branch presents to: keeps the frame, draws into the host view.
final class OutputRenderer: VideoRenderer {
  let core: OutputCore
  init(core: OutputCore) { self.core = core }
  func render(_ frame: DecodedFrame) { core.render(frame) }
}
