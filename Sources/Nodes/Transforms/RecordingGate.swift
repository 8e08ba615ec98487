import PipelineGraph
import Synchronization

/// Puts a recording's tracks on the file's time and cuts its pauses out (seed 003: "the paused stretch is
/// left out of the file, not recorded as black or silence").
///
/// One ``Timeline`` is shared by the gates of one recording (its video and its audio branch, on the
/// same executor): the first frame kept of either track is the file's 0 (or the origin it is given); a pause is a stretch of source
/// time, from ``Timeline/pause(at:)`` to ``Timeline/resume(at:)`` (a recorder passes the end of the
/// latest frame its tracks carried at each call), and every later frame leaves at its source time minus
/// the origin and the cuts before it, so the video and the audio stay in step across a cut. Cuts can also
/// be given in advance (``Timeline/init(cuts:origin:)``: a command line's `--pause-at`/`--resume-at`). Frames
/// before the origin or inside a cut are dropped.
///
/// The gates are confined to their pipeline's executor; ``Timeline/pause(at:)`` and
/// ``Timeline/resume(at:)`` may be called from any thread.
public final class RecordingGate: Node {
  /// Consumes decoded frames in source time.
  public typealias Input = DecodedFrame
  /// Emits them in the file's time.
  public typealias Output = DecodedFrame

  /// The time line a recording's gates share.
  public final class Timeline: @unchecked Sendable {
    /// The cuts, written by ``pause(at:)``/``resume(at:)`` from any thread; `version` tells the gates
    /// when to read them again (one atomic load a frame otherwise).
    private let control: Locked<(cuts: [MediaRange], open: MediaTime?)>
    private let version = Atomic(0)
    // Confined to the executor of the gates that share the time line.
    private var seenVersion = -1
    private var cuts: [MediaRange] = []
    private var openCut: MediaTime?
    private var origin: MediaTime?

    /// A time line with `cuts` (source time) left out in advance; cuts that overlap or touch are one cut
    /// (a stretch is left out once, however many cuts name it). `origin` is the file's 0 in source time
    /// (nil: the first frame kept of either track).
    public init(cuts: [MediaRange] = [], origin: MediaTime? = nil) {
      control = Locked((Self.merged(cuts), nil))
      self.origin = origin
    }

    /// `cuts` sorted, overlapping and touching ones joined, empty ones dropped.
    static func merged(_ cuts: [MediaRange]) -> [MediaRange] {
      var joined: [MediaRange] = []
      for cut in cuts.sorted(by: { $0.start < $1.start }) where cut.end > cut.start {
        if let last = joined.last, cut.start <= last.end {
          joined[joined.count - 1] = MediaRange(start: last.start, end: max(last.end, cut.end))
        } else {
          joined.append(cut)
        }
      }
      return joined
    }

    /// Leaves out every frame at or after source time `time` until ``resume(at:)``; nothing when paused.
    public func pause(at time: MediaTime) {
      control.withLock { control in
        if control.open == nil { control.open = time }
      }
      version.add(1, ordering: .releasing)
    }

    /// Keeps frames again from source time `time` on (the stretch since the pause is a cut); nothing
    /// when not paused.
    public func resume(at time: MediaTime) {
      control.withLock { control in
        guard let start = control.open else { return }
        control.open = nil
        control.cuts = Self.merged(control.cuts + [MediaRange(start: start, end: time)])
      }
      version.add(1, ordering: .releasing)
    }

    /// Leaves out `range` of source time from now on, from any thread: a stretch known to hold nothing
    /// of any track (a replay's hole), closed up as a cut is. Frames already placed stay where they are,
    /// so a caller leaves a stretch out before any frame after it reaches the gates.
    public func leaveOut(_ range: MediaRange) {
      guard range.end > range.start else { return }
      control.withLock { $0.cuts = Self.merged($0.cuts + [range]) }
      version.add(1, ordering: .releasing)
    }

    /// The file's time of a frame at source time `time`; nil when it is left out.
    func place(_ time: MediaTime) throws -> MediaTime? {
      let current = version.load(ordering: .acquiring)
      if current != seenVersion {
        seenVersion = current
        (cuts, openCut) = control.withLock { ($0.cuts, $0.open) }
      }
      if let openCut, time >= openCut { return nil }
      guard !cuts.contains(where: { $0.contains(time) }) else { return nil }
      let origin = self.origin ?? time
      self.origin = origin
      guard time >= origin else { return nil }
      var removed = MediaDuration.zero
      for cut in cuts where cut.end <= time && cut.end > origin {
        removed = try removed + (try cut.end - max(cut.start, origin))
      }
      let sinceOrigin = try time - origin
      let placed = try sinceOrigin - removed
      return try MediaTime(microseconds: 0) + placed
    }
  }

  /// The node's name.
  public let name: String
  /// The shared time line.
  public let timeline: Timeline
  /// Frames left out (paused, or before the origin).
  public private(set) var leftOut = 0

  /// A gate on `timeline`.
  public init(name: String = "RecordingGate", timeline: Timeline) {
    self.name = name
    self.timeline = timeline
  }

  /// Places one frame, or leaves it out.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard let time = try timeline.place(input.time) else { return leftOut += 1 }
    context.emit(DecodedFrame(track: input.track, time: time, duration: input.duration, frame: input.frame))
  }
}
