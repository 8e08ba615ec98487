import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// What an Audio and a Video Output share: the six states (rules.md O1–O9), the Replay binding, the
/// lifecycle; the public classes add their kind's parts (volume; host view and snapshots).
///
/// Guarded by the runtime's lock, except what a presented frame touches: the host view, the last frame
/// and the render size are guarded by the output's own render lock (taken after the runtime's, never
/// before it), so that a frame takes that one lock and no process-wide one. Delegate calls are queued
/// under the runtime's lock and delivered on the main queue after it is released (rules.md L28), never to
/// a disposed output (L35).
final class OutputCore: @unchecked Sendable {
  enum Kind {
    case audio
    case video
  }

  /// The shared raw values of both state enums (O1, O2): `.active` is `.playing` / `.rendering`.
  enum State: Int {
    case idle = 0
    case buffering = 1
    case active = 2
    case failed = 3
    case paused = 4
    case completed = 5
  }

  /// What a Replay binding holds.
  struct Binding {
    let replay: TiCloudStorageReplay
    let channel: UInt8
    var engineID: Replay.OutputID?
  }

  let kind: Kind
  /// The public object, for the delegate calls and the callback scope.
  weak var owner: AnyObject?
  var state = State.idle
  /// The runtime session it belongs to (L23), from its creation.
  var session: Int?
  var disposed = false
  var binding: Binding? {
    didSet {
      let bound = binding != nil
      renderLock.withLock { rendering.bound = bound }
    }
  }
  /// Presented a frame since the play, the seek or the binding (resume goes back to `.active`).
  var presenting = false
  var volume = 100
  /// What a presented frame touches, guarded by `renderLock`: once `detachView` returns, no frame is
  /// being drawn into the old view (O37).
  private struct Rendering {
    var view: (any VideoRenderer)?
    /// Bound to a Replay (mirrors ``binding``): a frame is kept and sized only then.
    var bound = false
    /// The last frame of the current binding generation (S4, S7).
    var frame: DecodedFrame?
    /// The size of the last picture presented since the binding (seed 002's `renderSize`).
    var size = CGSize.zero
  }
  private var rendering = Rendering()
  private let renderLock = Lock()
  var snapshotPending = false
  /// Sends a state change, a failure or a new render size to the delegate (set by the public class).
  var notifyState: (@Sendable (State) -> Void)?
  var notifyFailure: (@Sendable (Int32) -> Void)?
  var notifyRenderSize: (@Sendable (CGSize) -> Void)?

  init(kind: Kind) {
    self.kind = kind
    session = Runtime.shared.withLock { Runtime.shared.sessionOfNewObjects }
  }

  /// True while a host view is bound.
  var hasView: Bool { renderLock.withLock { rendering.view != nil } }

  /// The bound host view.
  var hostView: (any VideoRenderer)? { renderLock.withLock { rendering.view } }

  /// Binds or unbinds the host view.
  func setView(_ new: (any VideoRenderer)?) { renderLock.withLock { rendering.view = new } }

  /// The last frame of the current binding generation, for a snapshot (S4, S7).
  var frame: DecodedFrame? { renderLock.withLock { rendering.frame } }

  /// The size of the last picture presented since the binding (seed 002's `renderSize`); `.zero` before.
  var renderSize: CGSize { renderLock.withLock { rendering.size } }

  /// A frame this output's branch presents (on the graph's thread), under the render lock alone: drawn
  /// into the host view if one is bound, kept for snapshots while bound to a Replay; a picture of
  /// another size than the last is reported after it is drawn (then, and only then, under the runtime's
  /// lock).
  func render(_ frame: DecodedFrame) {
    let resized = renderLock.withLock { () -> CGSize? in
      rendering.view?.render(frame)
      guard rendering.bound else { return nil }
      rendering.frame = frame
      let size = CGSize(width: frame.frame.width, height: frame.frame.height)
      guard size != rendering.size else { return nil }
      rendering.size = size
      return size
    }
    guard let size = resized else { return }
    let told = Runtime.shared.withLock { () -> ((@Sendable () -> Void), [AnyObject])? in
      guard let binding, let notify = notifyRenderSize, !disposed else { return nil }
      return ({ notify(size) }, binding.replay.associated())
    }
    if let (call, objects) = told { deliverOnMain([call], for: objects) }
  }

  /// Sets the render size (reported only when it changes); returns the delegate call to make after the
  /// runtime's lock (held by the caller) is released.
  func resize(to size: CGSize) -> (@Sendable () -> Void)? {
    let changed = renderLock.withLock { () -> Bool in
      guard size != rendering.size else { return false }
      rendering.size = size
      return true
    }
    guard changed, let notify = notifyRenderSize, !disposed else { return nil }
    return { notify(size) }
  }

  /// Checks the runtime and the disposal and marks the output as holding resources (under the lock).
  func admit(_ runtime: Runtime) -> Int32 {
    guard !disposed else { return TiCloudStorageErrorCode.notInitialized }
    return runtime.admit(&session, holder: owner)
  }

  /// The moves the rules allow (O4–O9, O24–O28): into `.buffering` from anything but itself (an accepted
  /// play or a seek), into `.idle` from anything (detach, stop); `.active` only from `.buffering` (its
  /// first frame) and `.paused` (resume); `.paused` from a playing state (pause); `.completed` from a
  /// playing or paused state (drained: a paused play over nothing still ends); `.failed` from any state
  /// of a bound play that has not ended. A failed or completed output leaves only by a new play, a seek or
  /// a detach (O27).
  static let moves: [State: Set<State>] = [
    .idle: [.buffering],
    .buffering: [.idle, .active, .paused, .failed, .completed],
    .active: [.idle, .buffering, .paused, .failed, .completed],
    .paused: [.idle, .buffering, .active, .failed, .completed],
    .failed: [.idle, .buffering],
    .completed: [.idle, .buffering],
  ]

  /// Moves to `state` (no duplicate notifications, O12); returns the delegate call to make after the
  /// lock is released. A move the rules do not allow (``moves``) is refused: the state stays.
  func move(to new: State) -> (@Sendable () -> Void)? {
    guard new != state else { return nil }
    guard Self.moves[state]?.contains(new) == true else { return nil }
    state = new
    guard let notify = notifyState, !disposed else { return nil }
    return { notify(new) }
  }

  /// A new binding generation: snapshots have no frame until the next one arrives (S7).
  func forgetFrame() {
    renderLock.withLock { rendering.frame = nil }
  }
}

/// Delivers delegate calls on the main queue as callbacks of `objects`.
func deliverOnMain(_ calls: [@Sendable () -> Void], for objects: [AnyObject]) {
  guard !calls.isEmpty else { return }
  Runtime.shared.deliver(on: .main, for: objects) {
    for call in calls { call() }
  }
}
