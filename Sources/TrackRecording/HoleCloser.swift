import Dispatch
import Nodes
import PipelineGraph

/// Closes up a replay's holes in a recording of what the replay presents (`tipipe record --endpoint`):
/// a stretch the replay reports as a gap of every recorded track — a hole of the recordings, which the
/// play skips without waiting — is left out of the file (T18: a gap is closed up, no filler), so the
/// picture after it follows at once, as the play showed it. A gap of one track while another goes on
/// (a picture missing under sound) is kept: the play showed it.
///
/// A replay reports a gap when its output crosses it, before the frame after it is presented (R71;
/// one held for a failed object, R73, when media after it presents). So a feeder whose track jumps
/// (``admit(_:)``) first lets the reports' queue run what was queued before (the gap reports), then
/// leaves out the reported part of the jump before handing the frame on: the recorder places frames as
/// they come, so a stretch is left out before any frame after it arrives. A stretch is never left out
/// behind the start of a frame already handed on (that would put later frames before earlier ones).
///
/// Thread-safe: the feeders run on the replay's output threads, the reports on their queue.
public final class HoleCloser: Sendable {
  private struct State {
    /// The end of each track's latest frame.
    var ends: [TrackID: MediaTime] = [:]
    /// The latest start of a frame handed on, of any track.
    var frontier: MediaTime?
    /// Gaps reported of every recorded track, latest last.
    var holes: [MediaRange] = []
    /// The play is over: nothing waits for the reports' queue any more.
    var finished = false
  }

  /// A jump shorter than this is a frame late or dropped, not a hole.
  public static let tolerance = MediaDuration.microseconds(100_000)
  /// How long a frame after a jump waits for the reports' queue at most: seconds, as a busy machine may
  /// keep a queue from running (a hole then stays in the recording); a play that stops calls
  /// ``finish()`` first, which ends the wait at once.
  public static let reportsPatience = Duration.seconds(10)
  /// The tracks recorded: a gap is a hole when it concerns all of them.
  public let recorded: Set<TrackID>
  /// The queue the gap reports arrive on.
  private let reports: DispatchQueue
  /// Leaves a stretch out of the recordings (every recorder of the play).
  private let leaveOut: @Sendable (MediaRange) -> Void
  private let state = Locked(State())

  /// A closer for the recordings of `recorded`, of a play from `start` whose gap reports arrive on
  /// `reports` (a serial queue: the replay's callback queue), that leaves holes out with `leaveOut`. Each
  /// track is taken to have shown everything up to `start`: a first frame after a hole at the play's start
  /// (after some sound) follows a jump too.
  public init(
    recorded: Set<TrackID>, from start: MediaTime, reports: DispatchQueue = .main,
    leaveOut: @escaping @Sendable (MediaRange) -> Void
  ) {
    self.recorded = recorded
    self.reports = reports
    self.leaveOut = leaveOut
    state.withLock { state in for track in recorded { state.ends[track] = start } }
  }

  /// A gap the replay reported of `range`, for `tracks` (empty: every track), on the reports' queue; it
  /// is a hole when it concerns every recorded track.
  public func reported(_ range: MediaRange, tracks: Set<TrackID>) {
    guard tracks.isEmpty || recorded.isSubset(of: tracks) else { return }
    state.withLock { $0.holes = Array(($0.holes + [range]).suffix(64)) }
  }

  /// Returns once `frame` may be handed to its recorder: at once unless it follows a jump in its
  /// track's times, whose reported holes are left out first.
  public func admit(_ frame: DecodedFrame) {
    let end = frame.time.advanced(by: frame.duration, notAfter: MediaTime(microseconds: .max))
    let jump = state.withLock { state -> MediaRange? in
      let previous = state.ends[frame.track]
      state.ends[frame.track] = max(previous ?? end, end)
      guard let previous, !state.finished,
        frame.time > previous.advanced(by: Self.tolerance, notAfter: MediaTime(microseconds: .max))
      else {
        state.frontier = max(state.frontier ?? frame.time, frame.time)
        return nil
      }
      return MediaRange(start: previous, end: frame.time)
    }
    guard let jump else { return }
    // The gap reports queued before this frame was presented run first (bounded by reportsPatience; the
    // play's end stops the wait: a queue held while the play stops leaves the stretch as it is).
    let ran = DispatchSemaphore(value: 0)
    reports.async { ran.signal() }
    var reportsRan = false
    let polls = Int(Self.reportsPatience / .milliseconds(50))
    for _ in 0..<polls where !reportsRan && !state.withLock({ $0.finished }) {
      reportsRan = ran.wait(timeout: .now() + .milliseconds(50)) == .success
    }
    // Left out under the lock: another track's frame after the stretch waits until it is.
    state.withLock { state in
      defer { state.frontier = max(state.frontier ?? frame.time, frame.time) }
      guard reportsRan, !state.finished else { return }
      // Past the start of every frame already handed on: a stretch is never left out behind one (later
      // frames would go before it). It may begin inside one: a sound frame that straddles the hole's
      // edge keeps its place, and the first sound after the hole may overlap its tail (the recorder
      // leaves that frame out: one frame of sound, where starting the cut at the straddler's end would
      // put everything after the hole that much late — a picture a frame late at 20 fps).
      let from = state.frontier.map { max(jump.start, $0.advanced(by: .microseconds(1), notAfter: jump.end)) }
      for hole in state.holes {
        let start = max(from ?? jump.start, hole.start)
        let end = min(jump.end, hole.end)
        if end > start { leaveOut(MediaRange(start: start, end: end)) }
      }
    }
  }

  /// The play is over: no feeder waits for the reports' queue any more. Call it before stopping the play
  /// from the reports' queue (a feeder waiting for that queue would hold the stop up to
  /// ``reportsPatience``).
  public func finish() { state.withLock { $0.finished = true } }
}
