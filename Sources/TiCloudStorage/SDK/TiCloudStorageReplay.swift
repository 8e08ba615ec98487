import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// The seed's `TiCloudStorageReplay`: plays one device's recordings of a range to the Audio and Video
/// Outputs bound to it, at seven speeds, with pause, seek, gaps and the position (rules.md group R).
///
/// Created only by ``TiCloudStorage/createReplay()`` (R5). Its graphs run on a thread of their own;
/// `onTimeChanged`, `onError`, `onCompleted` and `onRecordingGap` run on the main queue, or on the SDK's
/// shared background queue for a Replay created with `callbackThread: .background` (R7). Every method
/// may be called from any thread and returns at once; after ``dispose()`` they return notInitialized.
/// The engine under it is the package's `Replay`; this object adds the instance, the Outputs and the lifecycle rules.
public final class TiCloudStorageReplay: @unchecked Sendable {
  let runtime = Runtime.shared
  /// The instance that created it (its token, its dispose).
  let instance: TiCloudStorage
  /// Where the callbacks run.
  public let callbackThread: TiCloudStorageCallbackThread
  // Guarded by the runtime's lock.
  private var session: Int?
  private var disposed = false
  private var engine: Replay?
  private var lastSpeed = TiCloudStorageReplaySpeed.x1
  private var lastTimeMs: Int64?
  /// The token the current play started with (R18).
  private var playToken = ""
  var outputs: [OutputCore] = []
  /// Recording tasks started on it (R75: an active one blocks dispose).
  var recordingTasks: [TiCloudStorageRecordingTask] = []
  /// Its raw dump while one captures.
  var rawDump: RawDumpWriter?
  private var handlers = Handlers()

  struct Handlers {
    var onTimeChanged: ((Int64) -> Void)?
    var onError: ((Int32) -> Void)?
    var onCompleted: (() -> Void)?
    var onRecordingGap: ((TiCloudStorageRecordingGap) -> Void)?
  }

  /// How its clock runs.
  public let pace: TiCloudStorageReplayPace

  init(instance: TiCloudStorage, callbackThread: TiCloudStorageCallbackThread, pace: TiCloudStorageReplayPace) {
    self.instance = instance
    self.callbackThread = callbackThread
    self.pace = pace
    // It belongs to its instance's runtime session (L23): one made by an instance of an earlier session
    // is shut down from the start.
    session = Runtime.shared.withLock { instance.session }
  }

  deinit {
    // Released without dispose: the dump's files are still completed.
    rawDump?.finish(.replayDisposed) { _ in }
    // Not waited for: the last reference may go under the runtime's lock, which the executor takes.
    engine?.stopWithoutWaiting()
  }

  // MARK: Properties and callbacks

  /// Video frames dropped as late since the Replay was created (a Linux addition for benchmarks: at
  /// fast speeds a frame whose time has passed is not drawn).
  public var droppedVideoFrames: Int {
    runtime.withLock { engine?.statistics.droppedFrames ?? 0 }
  }

  /// Video frames presented late since the Replay was created (a Linux addition for benchmarks: later
  /// than their duration after their time, shown all the same at 1× and slower).
  public var lateVideoFrames: Int {
    runtime.withLock { engine?.lateVideoFrames ?? 0 }
  }

  /// The speed; `.x1` on a new Replay (R8), kept across plays and after dispose (L34).
  public var speed: TiCloudStorageReplaySpeed {
    runtime.withLock { engine?.speed ?? lastSpeed }
  }

  /// The position in UTC ms: nil before the play has one and after `stop` (R9, R44), the last position
  /// while paused, `endTimeMs` after natural completion, the last known one after a failure (R49).
  public var currentTimeMs: Int64? {
    runtime.withLock {
      guard !disposed, let engine else { return lastTimeMs }
      return engine.currentTime?.milliseconds
    }
  }

  /// Called with the new position: at most 10 times per second of media, plus once per seek, per gap
  /// crossed and at the end (R51, R53). A handler set late gets no earlier events (R52).
  public var onTimeChanged: ((Int64) -> Void)? {
    get { runtime.withLock { handlers.onTimeChanged } }
    set { install { $0.onTimeChanged = newValue } }
  }

  /// Called once when an error ends the current play (token, permission, network, range, recording)
  /// (R55): every bound Output has moved to `.failed` by then (O25).
  public var onError: ((Int32) -> Void)? {
    get { runtime.withLock { handlers.onError } }
    set { install { $0.onError = newValue } }
  }

  /// Called once when the current play's range is naturally exhausted (R63).
  public var onCompleted: (() -> Void)? {
    get { runtime.withLock { handlers.onCompleted } }
    set { install { $0.onCompleted = newValue } }
  }

  /// Called for each gap the play crosses, between the time events around it (R71).
  public var onRecordingGap: ((TiCloudStorageRecordingGap) -> Void)? {
    get { runtime.withLock { handlers.onRecordingGap } }
    set { install { $0.onRecordingGap = newValue } }
  }

  private func install(_ change: (inout Handlers) -> Void) {
    runtime.withLock {
      change(&handlers)
      if let engine { connect(engine) }
    }
  }

  /// Gives the engine the current handlers (under the lock): an event goes to the handler that was set
  /// when it happened.
  private func connect(_ engine: Replay) {
    if let handler = handlers.onTimeChanged {
      let box = UncheckedBox(handler)
      // The seed's milliseconds exist from here on.
      engine.onTimeChanged = { box.value($0.milliseconds) }
    } else {
      engine.onTimeChanged = nil
    }
    if let handler = handlers.onCompleted {
      let box = UncheckedBox(handler)
      engine.onCompleted = { box.value() }
    } else {
      engine.onCompleted = nil
    }
    if let handler = handlers.onRecordingGap {
      let box = UncheckedBox(handler)
      engine.onRecordingGap = { box.value(TiCloudStorageRecordingGap($0)) }
    } else {
      engine.onRecordingGap = nil
    }
    let box = handlers.onError.map { UncheckedBox($0) }
    let log = runtime.log
    engine.onError = { [weak self] failure in
      // The seed's callback gets the code; the log keeps the node and the errors underneath.
      log?.write("replay failed: \(failure.detailedDescription.oneLine)")
      self?.playFailed(failure.code)
      box?.value(failure.code.rawValue)
    }
  }

  // MARK: Playing

  /// Plays `[startTimeMs, endTimeMs)` from `initialTimeMs` (or the start) with the instance's token.
  ///
  /// - Returns: ok when accepted (R10); invalidArgument for an empty range, an initial time outside it
  ///   or an instance without a token (R11, R12, D2); notBound without a bound Output (R13);
  ///   tokenExpired when the instance's token is known to have expired (D11); notInitialized after
  ///   dispose. A rejected play changes nothing (R14). An accepted one replaces the current play without
  ///   its callbacks, keeping bindings, volumes and the speed, not a pause (R19, R20), and moves every
  ///   bound Output to `.buffering` (O27).
  public func play(startTimeMs: Int64, endTimeMs: Int64, initialTimeMs: Int64? = nil) -> Int32 {
    let played = Self.range(startTimeMs, endTimeMs, from: initialTimeMs)
    let outcome = runtime.withLock { () -> (Int32, Replay?, String, [@Sendable () -> Void]) in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil, "", []) }
      guard played != nil else { return (TiCloudStorageErrorCode.invalidArgument, nil, "", []) }
      guard !outputs.isEmpty else { return (TiCloudStorageErrorCode.notBound, nil, "", []) }
      let token = instance.tokenForNewOperation()
      guard case .success(let token) = token else { return (token.failureCode, nil, "", []) }
      playToken = token
      var calls: [@Sendable () -> Void] = []
      for output in outputs {
        output.presenting = false
        if output.kind == .video { output.forgetFrame() }
        if let call = output.move(to: .buffering) { calls.append(call) }
      }
      return (TiCloudStorageErrorCode.ok, engineIfNeeded(), token, calls)
    }
    guard outcome.0 == TiCloudStorageErrorCode.ok, let engine = outcome.1, let played else { return outcome.0 }
    let code = engine.play(played.range, from: played.initial, token: outcome.2)
    deliverOnMain(outcome.3, for: associated())
    return code.rawValue
  }

  /// The play `[startMs, endMs)` from `initialMs` as times: nil (`invalidArgument`) for an empty range, an
  /// initial time outside it, or times the milliseconds cannot name (R14: nothing changes).
  private static func range(_ startMs: Int64, _ endMs: Int64, from initialMs: Int64?) -> (
    range: MediaRange, initial: MediaTime?
  )? {
    guard let start = MediaTime(checkedMilliseconds: startMs), let end = MediaTime(checkedMilliseconds: endMs),
      start < end
    else { return nil }
    let range = MediaRange(start: start, end: end)
    guard let initialMs else { return (range, nil) }
    guard let initial = MediaTime(checkedMilliseconds: initialMs), range.contains(initial) else { return nil }
    return (range, initial)
  }

  /// Halts playback; ok again when already paused (R22, R23); notStarted without an active play (R26).
  /// Moves every bound Output that has not failed or completed to `.paused` (O7).
  public func pause() -> Int32 {
    changePause { engine in
      engine.pause()
    } moving: { output in
      [.buffering, .active].contains(output.state) ? .paused : nil
    }
  }

  /// Continues from where playback paused; ok when not paused (R24, R25); notStarted without an active
  /// play (R26).
  public func resume() -> Int32 {
    changePause { engine in
      engine.resume()
    } moving: { output in
      output.state == .paused ? (output.presenting ? .active : .buffering) : nil
    }
  }

  private func changePause(
    _ change: (Replay) -> TiErrorCode, moving: (OutputCore) -> OutputCore.State?
  ) -> Int32 {
    let lookup = runtime.withLock { () -> Result<Replay, TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard let engine else { return .failure(TiError.refused(TiCloudStorageErrorCode.notStarted)) }
      return .success(engine)
    }
    guard case .success(let engine) = lookup else { return lookup.failureCode }
    let code = change(engine)
    guard code == .ok else { return code.rawValue }
    let calls = runtime.withLock { outputs.compactMap { output in moving(output).flatMap { output.move(to: $0) } } }
    deliverOnMain(calls, for: associated())
    return TiCloudStorageErrorCode.ok
  }

  /// Moves the play to the first playable position not earlier than `timeMs` (R33), keeping the speed
  /// and the pause (R31); the latest seek wins (R32). notStarted without an active play (R28, R30),
  /// invalidArgument outside the play's range (R29).
  public func seek(toTimeMs timeMs: Int64) -> Int32 {
    let lookup = runtime.withLock { () -> Result<Replay, TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      guard let engine, engine.isActive else { return .failure(TiError.refused(TiCloudStorageErrorCode.notStarted)) }
      return .success(engine)
    }
    guard case .success(let engine) = lookup else { return lookup.failureCode }
    // A time the milliseconds cannot name is outside any play's range.
    guard let time = MediaTime(checkedMilliseconds: timeMs) else { return TiCloudStorageErrorCode.invalidArgument }
    let code = engine.seek(to: time)
    guard code == .ok else { return code.rawValue }
    let paused = engine.isPaused
    let calls = runtime.withLock {
      outputs.compactMap { output -> (@Sendable () -> Void)? in
        output.presenting = false
        guard !paused, [.active, .buffering, .completed].contains(output.state) else { return nil }
        return output.move(to: .buffering)
      }
    }
    deliverOnMain(calls, for: associated())
    return TiCloudStorageErrorCode.ok
  }

  /// Sets one of the seven speeds, at once and for later plays too (R37, R38); off `.x1` audio is muted
  /// (R40) and slow speeds hold frames (R42).
  public func setSpeed(_ speed: TiCloudStorageReplaySpeed) -> Int32 {
    let lookup = runtime.withLock { () -> Result<Replay, TiError> in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return .failure(TiError.refused(code)) }
      lastSpeed = speed
      return .success(engineIfNeeded())
    }
    guard case .success(let engine) = lookup else { return lookup.failureCode }
    engine.setSpeed(speed)
    return TiCloudStorageErrorCode.ok
  }

  /// Ends the current play without `onCompleted` or `onError`, clears `currentTimeMs`, keeps the
  /// bindings and the speed (R44, R45), and moves bound Outputs to `.idle` (O28); ok again (R46).
  /// inUse inside a callback of this Replay or its Outputs (L24).
  public func stop() -> Int32 {
    let outcome = runtime.withLock { () -> (Int32, Replay?, [@Sendable () -> Void]) in
      let code = admit()
      guard code == TiCloudStorageErrorCode.ok else { return (code, nil, []) }
      guard !runtime.insideCallback(of: associated()) else { return (TiCloudStorageErrorCode.inUse, nil, []) }
      let calls = outputs.compactMap { output -> (@Sendable () -> Void)? in
        output.presenting = false
        return output.move(to: .idle)
      }
      return (TiCloudStorageErrorCode.ok, engine, calls)
    }
    outcome.1?.stop()
    deliverOnMain(outcome.2, for: associated())
    return outcome.0
  }

  /// Releases the Replay: inUse while a play is active, an Output is bound, a RecordingTask or a raw
  /// dump is active, or inside a callback of it (R75, R77, L24); ok otherwise and when already disposed (L32). Afterwards its methods return
  /// notInitialized, its getters their last values, and no callback runs (R76, L33–L35).
  public func dispose() -> Int32 {
    let outcome = runtime.withLock { () -> (Int32, Replay?) in
      guard !disposed else { return (TiCloudStorageErrorCode.ok, nil) }
      guard !runtime.insideCallback(of: associated()) else { return (TiCloudStorageErrorCode.inUse, nil) }
      recordingTasks.removeAll { !$0.isActive }
      guard outputs.isEmpty, !(engine?.isActive ?? false), recordingTasks.isEmpty,
        !(rawDump.map { !$0.isFinished } ?? false)
      else {
        return (TiCloudStorageErrorCode.inUse, nil)
      }
      disposed = true
      lastTimeMs = engine?.currentTime?.milliseconds
      if let engine { lastSpeed = engine.speed }
      runtime.release(self)
      instance.replayDisposed(self)
      let engine = self.engine
      self.engine = nil
      return (TiCloudStorageErrorCode.ok, engine)
    }
    if let engine = outcome.1 {
      engine.onTimeChanged = nil
      engine.onError = nil
      engine.onCompleted = nil
      engine.onRecordingGap = nil
      engine.stop()
    }
    return outcome.0
  }

  // MARK: For the Outputs and the instance (under the runtime's lock unless said)

  /// Whether the Replay can be used now (checks it and its instance); binds it to the session.
  func admit() -> Int32 {
    guard !disposed, !instance.isDisposedLocked else { return TiCloudStorageErrorCode.notInitialized }
    return runtime.admit(&session, holder: self)
  }

  var isDisposedLocked: Bool { disposed }

  /// The speed (under the lock).
  var speedLocked: TiCloudStorageReplaySpeed { engine?.speed ?? lastSpeed }

  /// The engine, created at the first use that needs it (constructors acquire nothing, L6).
  func engineIfNeeded() -> Replay {
    if let engine { return engine }
    var environment = runtime.replayEnvironmentLocked(pace: pace)
    let queue = runtime.queue(callbackThread)
    environment.deliver = { [weak self] body in
      guard let self else { return }
      // The callback's objects are asked for when it runs (under the runtime's lock there): a position
      // report leaves the graph's thread without the runtime's lock.
      let objects: @Sendable () -> Set<ObjectIdentifier> = { [weak self] in
        Set((self?.associated() ?? []).map(ObjectIdentifier.init))
      }
      self.runtime.deliver(on: queue, forObjectsOf: objects) { [weak self] in
        guard let self, !self.runtime.withLock({ self.disposed }) else { return }
        body()
      }
    }
    // The speed goes in at creation: a command would wait for the engine's executor under the lock.
    let engine = Replay(service: runtime.service!, environment: environment, speed: lastSpeed)
    // The seed has no callback for it: a superseded seek goes to the SDK's log.
    let log = runtime.log
    engine.onSeekSuperseded = { superseded, target in
      log?.write(
        "replay: the seek to \(superseded.milliseconds) was superseded by a seek to \(target.milliseconds) before it"
          + " took effect")
    }
    self.engine = engine
    connect(engine)
    return engine
  }

  /// This Replay and its bound Outputs (the objects a callback of either is associated with, L26).
  func associated() -> [AnyObject] { [self] + outputs.compactMap(\.owner) }

  private func associatedUnlocked() -> [AnyObject] { runtime.withLock { associated() } }

  /// The play ended with `code`: every bound Output fails (O25); an expired token is remembered (D11).
  private func playFailed(_ code: TiErrorCode) {
    let calls = runtime.withLock { () -> [@Sendable () -> Void] in
      if code == .tokenExpired { instance.noteExpired(playToken) }
      return outputs.compactMap { $0.move(to: .failed) }
    }
    deliverOnMain(calls, for: associatedUnlocked())
  }

  /// True while a play is running or paused.
  var hasActivePlay: Bool { engine?.isActive ?? false }
}

/// The seven speeds (rules.md R1): `.x1` = 0, `.x2` = 1, `.x4` = 2, `.x8` = 3, `.x0_5` = 4, `.x0_25` = 5,
/// `.x0_125` = 6.
public typealias TiCloudStorageReplaySpeed = ReplaySpeed
