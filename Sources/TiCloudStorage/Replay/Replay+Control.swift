import Dispatch
import Nodes
import PipelineGraph
import Synchronization

/// A Replay's one concurrency model: everything it knows lives on its control executor (the
/// environment's, which runs its graphs too), as a playback thread holds a player's state in ExoPlayer.
///
/// - The graph's events (a presented frame, a gap crossed, the end, a failure) already arrive there and
///   change `Control` directly: a presented frame takes no lock of the Replay's.
/// - A call of the SDK is a command: from the executor's own thread (an output's event) it runs at once;
///   from any other it is queued behind the executor's jobs and the caller waits for its answer
///   (`perform(_:)`), because the seed answers each call with a code and a getter read after a call must
///   see it. A manual executor (tests) has no thread: the caller runs the command itself, once no other
///   thread runs the executor.
/// - Getters read what the executor published after its last command or event (`Facts`, and the
///   position and frame counts as atomics): they never wait for the executor, so the SDK may read them
///   under its own lock. `lastPresentedFrame` alone is a command.
/// - Callbacks leave the executor through the environment's `deliver`.
///
/// Pacers, devices and the pipeline are told inside the command that changes the rules, so that they
/// follow the commands in their order. Locks that remain, in the order they may be taken
/// (TiCloudStorage's "Replay and export as graphs" lists them): the SDK's runtime lock is never held
/// while a command waits for the executor; the executor takes the published facts' lock only when a
/// fact other than the position changes (a play, a pause, a seek's first frame, an end), never per
/// frame.
extension Replay {
  /// Everything the Replay knows, confined to its control executor: the rules, and what they do not hold
  /// (targets, recorders, the graph). Touched only inside `perform(_:)`.
  struct Control {
    var rules = ReplayStateMachine()
    /// What the executor reads of the callbacks (one atomic load unless they changed).
    var handlers: Published<Handlers>.Reader
    /// Those awaiting a play's end (the async ``play(_:from:token:)``), by
    /// play number.
    var waiters: [Int: Waiter] = [:]
    var attachments: [OutputID: Attachment] = [:] {
      didSet { publishLevels() }
    }
    var recorders: [RecorderEntry] = [] {
      didSet { tappedRecorders.publish(recorders.map(\.recorder)) }
    }
    /// Raw dumps capturing what it reads, with the timers that end them.
    var rawDumps: [(dump: RawDumpWriter, timer: ClockTimer)] = [] {
      didSet { tappedDumps.publish(rawDumps.map(\.dump)) }
    }
    /// What the graph's taps read per packet: `recorders` and `rawDumps` as they change.
    let tappedRecorders = Published<[ReplayRecorder]>([])
    let tappedDumps = Published<[RawDumpWriter]>([])
    /// What an audio branch reads per frame: whether the speed is 1× and each output's volume (published
    /// when either changes).
    let levels = Published(AudioLevels())
    var graph: Graph?
    /// What the active play fetched last over the network: its graphs read it again from there (a new one
    /// per play; none for a local library).
    var objects: RecentObjects?
    var lastFrame: DecodedFrame?
    var droppedBefore = 0
    var lateBefore = 0
    /// The facts last published.
    var published = Facts()

    init(handlers: Published<Handlers>) { self.handlers = handlers.reader() }

    /// Publishes `levels` from the rules' speed and the attachments.
    func publishLevels() {
      levels.publish(AudioLevels(normalSpeed: rules.speed == .x1, volumes: attachments.mapValues(\.volume)))
    }

    /// The events handler of output `id`.
    func events(of id: OutputID) -> (@Sendable (OutputEvent) -> Void)? { attachments[id]?.events }

    /// The devices of the audio outputs (paused with the play, flushed by a seek or a stop).
    var audioDevices: [any AudioDevice] {
      attachments.values.compactMap { attachment in
        if case .audio(let device) = attachment.target { return device }
        return nil
      }
    }

    /// Takes the current graph out, keeping its drop count.
    mutating func retireGraph() -> Graph? {
      guard let graph else { return nil }
      droppedBefore += graph.dropped
      lateBefore += graph.late
      self.graph = nil
      return graph
    }

    /// Takes the recorders out (the play ended for them).
    mutating func takeRecorders() -> [RecorderEntry] {
      defer { recorders = [] }
      return recorders
    }
  }

  /// The callbacks, as set from any thread and read on the executor.
  struct Handlers: Sendable {
    var onTimeChanged: (@Sendable (MediaTime) -> Void)?
    var onError: ErrorHandler?
    var onCompleted: (@Sendable () -> Void)?
    var onRecordingGap: (@Sendable (RecordingGap) -> Void)?
    var onSeekSuperseded: (@Sendable (MediaTime, MediaTime) -> Void)?
  }

  /// What the getters read without the executor, beside the position and frame counts (atomics, written
  /// per frame): published when one of them changes.
  struct Facts: Sendable, Equatable {
    var active = false
    var paused = false
    var speed = ReplaySpeed.x1
    /// Where a recording added now starts: the target, or (`followsPosition`) the position once there is
    /// one, else the target.
    var recordingAnchor: MediaTime?
    var followsPosition = false
    var graph: Graph?
    var droppedBefore = 0
    var lateBefore = 0

    init() {}

    init(_ control: Control) {
      // Field by field: a copy of the rules would retain each of their collections, once a frame.
      active = control.rules.active
      paused = control.rules.active && control.rules.paused
      speed = control.rules.speed
      recordingAnchor = control.rules.active ? control.rules.target : nil
      followsPosition = control.rules.positionFollowsTarget
      graph = control.graph
      droppedBefore = control.droppedBefore
      lateBefore = control.lateBefore
    }

    static func == (lhs: Facts, rhs: Facts) -> Bool {
      lhs.active == rhs.active && lhs.paused == rhs.paused && lhs.speed == rhs.speed
        && lhs.recordingAnchor == rhs.recordingAnchor && lhs.followsPosition == rhs.followsPosition
        && lhs.graph === rhs.graph && lhs.droppedBefore == rhs.droppedBefore && lhs.lateBefore == rhs.lateBefore
    }
  }

  /// Runs `command` on the control executor with the Replay's `Control` and returns its answer: at
  /// once when the calling thread may run the executor's jobs (`PipelineExecutor/runHere(_:)`), else
  /// queued behind them and waited for. Then publishes what changed for the getters.
  ///
  /// - Important: the executor must not wait for the caller (no job blocks on a thread that may be
  ///   inside a command), and must outlive the Replay: a command queued on a shut-down executor would
  ///   wait forever. `command` calls nothing that may call the Replay back.
  func perform<Answer>(_ command: (inout Control) -> Answer) -> Answer {
    var answer: Answer?
    if environment.executor.runHere({ answer = run(command) }) { return answer! }
    return withoutActuallyEscaping(command) { command in
      let handoff = Handoff(command)
      let done = DispatchSemaphore(value: 0)
      environment.executor.execute { [self] in
        handoff.answer = handoff.command.map { run($0) }
        // Let go of the command before the caller returns: it must not outlive its call.
        handoff.command = nil
        done.signal()
      }
      done.wait()
      return handoff.answer!
    }
  }

  /// A command carried to the executor and its answer carried back; the caller waits between the two,
  /// so one thread at a time touches it.
  private final class Handoff<Answer>: @unchecked Sendable {
    var command: ((inout Control) -> Answer)?
    var answer: Answer?
    init(_ command: @escaping (inout Control) -> Answer) { self.command = command }
  }

  /// On the executor: runs `command`, then publishes the position, the frame counts and (when they
  /// changed) the facts.
  private func run<Answer>(_ command: (inout Control) -> Answer) -> Answer {
    let answer = command(&control)
    position.store(control.rules.position?.microseconds ?? Self.noPosition, ordering: .releasing)
    videoFrames.store(control.rules.videoFrames, ordering: .relaxed)
    audioFrames.store(control.rules.audioFrames, ordering: .relaxed)
    playNumber.store(control.rules.playNumber, ordering: .releasing)
    let now = Facts(control)
    if now != control.published {
      control.published = now
      facts.publish(now)
    }
    return answer
  }

  /// `position`'s value while there is none.
  static let noPosition = Int64.min
}
