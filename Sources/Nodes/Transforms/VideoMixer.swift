import PipelineGraph

/// Composes the pictures of several tracks into one: each input's picture fitted inside its cell of a
/// canvas (black bars, never stretched), at a constant frame rate — the heart of a video compositor.
///
/// Inputs are told apart by their frames' track (a ``TrackSource`` tags them). Output pictures are at
/// `origin + n / fps`, the origin being given (files composed from their start) or else the first picture
/// of any input; each shows, per cell, the latest picture of its input at or before that instant. A slot
/// is composed once an input still running has reached it and every other has too, has ended, or has
/// stalled — lags more than ``maximumLag`` behind
/// and brought nothing for ``stallTime`` on the pipeline's clock (a live track that stalls does not hold the
/// others back; a file that decodes more slowly is waited for); an input that has not started, or ended more than ``holdAfterEnd``
/// ago, is black (an input that stops shows its last picture, then black). The end of stream composes
/// the slots up to the end of the last picture. What a mixer holds and does stays bounded whatever the
/// inputs' times: an input ``maximumQueued`` pictures ahead of the others is held back (its lane in
/// ``admission`` closes, and its ``TrackSource`` waits), and a stretch of more than ``maximumHole``
/// without any picture is a hole in the output.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class VideoMixer: Node {
  /// Consumes the inputs' pictures.
  public typealias Input = DecodedFrame
  /// Emits composed pictures.
  public typealias Output = DecodedFrame

  /// Where one input goes: a rectangle of the canvas, in pixels (even numbers).
  public struct Cell: Sendable, Hashable {
    /// Left edge.
    public var x: Int
    /// Top edge.
    public var y: Int
    /// Width.
    public var width: Int
    /// Height.
    public var height: Int

    /// A cell.
    public init(x: Int, y: Int, width: Int, height: Int) {
      self.x = x
      self.y = y
      self.width = width
      self.height = height
    }

    /// `count` cells in a grid filling `width`×`height`: as many columns as the square root rounded up,
    /// the rows they need, each cell the same even size.
    public static func grid(_ count: Int, width: Int, height: Int) -> [Cell] {
      guard count > 0 else { return [] }
      var columns = 1
      while columns * columns < count { columns += 1 }
      let rows = (count + columns - 1) / columns
      let cellWidth = max(2, (width / columns) & ~1)
      let cellHeight = max(2, (height / rows) & ~1)
      return (0..<count).map { index in
        Cell(x: (index % columns) * cellWidth, y: (index / columns) * cellHeight, width: cellWidth, height: cellHeight)
      }
    }
  }

  private final class Lane {
    let cell: Cell
    let fitter: PictureFitter
    var queue: [DecodedFrame] = []
    var shown: DecodedFrame?
    var frontier: MediaTime?
    var endedAt: MediaTime?
    var ended = false
    /// When its last picture arrived (pipeline clock).
    var arrival: ClockInstant?

    init(cell: Cell) throws {
      self.cell = cell
      fitter = try PictureFitter(width: cell.width, height: cell.height)
    }
  }

  /// The node's name.
  public let name: String
  /// The output track.
  public let output: TrackID
  /// The canvas width.
  public let width: Int
  /// The canvas height.
  public let height: Int
  /// Output pictures per second.
  public let fps: Int
  /// How far behind the most advanced input an input may be before slots are composed without it (once it
  /// has also brought nothing for ``stallTime``).
  public let maximumLag: MediaDuration
  /// How long (on the pipeline's clock) an input that lags more than ``maximumLag`` behind may bring
  /// nothing before it is taken as stalled. Kept apart from the lag: the lag must stay below what the
  /// admission lets the others run ahead, or a stall would never be found.
  public let stallTime: MediaDuration
  /// How long an input that ended keeps showing its last picture.
  public let holdAfterEnd: MediaDuration
  /// The longest stretch without any new picture that the mixer fills by showing what it has (10 s);
  /// past it (inputs whose time jumped) the output has a hole.
  public static let maximumHole = MediaDuration.microseconds(10_000_000)
  /// Pictures an input may queue while a slower one is waited for: past it its lane in ``admission`` is
  /// closed (its ``TrackSource`` waits); past four times it the slower one is no longer waited for.
  public static let maximumQueued = 32
  /// Holds back the sources of inputs that run ahead (give it to their ``TrackSource``s).
  public let admission = LaneAdmission()
  private let inputs: [TrackID]
  /// The look again while a lane is closed.
  private var recheck: ClockTimer?
  private var lanes: [TrackID: Lane] = [:]
  private var origin: MediaTime?
  /// When the first picture of any input arrived (pipeline clock).
  private var firstArrival: ClockInstant?
  private var next: Int64 = 0
  /// Pictures composed.
  public private(set) var composed = 0

  /// A mixer of `inputs` into `cells` (one each) of a `width`×`height` canvas at `fps`, emitting pictures
  /// of track `output` from `origin` (nil: the first picture of any input); ``stallTime`` is `stallTime`,
  /// or `maximumLag` when not given.
  /// - Throws: ``MediaError`` `invalidArgument` for mismatched inputs and cells, a cell outside the canvas or
  ///   odd, or a rate outside 1…240.
  public init(
    name: String = "VideoMixer", inputs: [TrackID], cells: [Cell], width: Int, height: Int, fps: Int,
    output: TrackID, maximumLag: MediaDuration = .microseconds(500_000), stallTime: MediaDuration? = nil,
    holdAfterEnd: MediaDuration = .microseconds(1_000_000), origin: MediaTime? = nil
  ) throws {
    guard !inputs.isEmpty, inputs.count == cells.count, Set(inputs).count == inputs.count else {
      throw MediaError(.invalidArgument, "a mixer needs one cell for each of its distinct inputs")
    }
    guard (1...240).contains(fps), width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
      throw MediaError(.invalidArgument, "a mixer needs an even size and a rate of 1…240")
    }
    for cell in cells {
      guard cell.x >= 0, cell.y >= 0, cell.x % 2 == 0, cell.y % 2 == 0, cell.x + cell.width <= width,
        cell.y + cell.height <= height
      else { throw MediaError(.invalidArgument, "cell \(cell) is not inside the \(width)x\(height) canvas") }
    }
    self.name = name
    self.inputs = inputs
    self.width = width
    self.height = height
    self.fps = fps
    self.output = output
    self.maximumLag = maximumLag
    self.stallTime = stallTime ?? maximumLag
    self.holdAfterEnd = holdAfterEnd
    self.origin = origin
    for (input, cell) in zip(inputs, cells) { lanes[input] = try Lane(cell: cell) }
  }

  private func slot(_ index: Int64) throws -> MediaTime {
    let (product, overflow) = index.multipliedReportingOverflow(by: 1_000_000)
    guard !overflow, let origin else { throw MediaError(.invalidArgument, "slot \(index) is out of range") }
    return try origin + .microseconds(product / Int64(fps))
  }

  /// Takes one input picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard let lane = lanes[input.track], input.frame.width > 0 else { return }
    if firstArrival == nil {
      origin = origin ?? input.time
      firstArrival = context.now
    }
    lane.arrival = context.now
    lane.queue.append(input)
    lane.frontier = max(lane.frontier ?? input.time, input.time)
    try composeReady(context: context, final: false)
    admit(context: context)
  }

  /// Closes the lanes of inputs with `maximumQueued` pictures waiting, opens the others; while one is
  /// closed, looks again just after every ``stallTime`` of the clock (an input that stopped must be found stalled
  /// even though nothing arrives any more).
  private func admit(context: NodeContext<DecodedFrame>) {
    // Pictures that a later one replaces before the next slot will never be shown: only the latest is
    // kept (many pictures between two slots must not close a lane that nothing would open again).
    if let upcoming = try? slot(next) {
      for lane in lanes.values {
        while lane.queue.count >= 2, lane.queue[1].time <= upcoming { lane.shown = lane.queue.removeFirst() }
      }
    }
    let closed = admission.update(
      lanes.map { input, lane in (input, lane.ended || lane.queue.count < Self.maximumQueued) })
    guard closed, recheck == nil else { return }
    recheck = context.scheduleTimer(after: .microseconds(stallTime.microseconds + 1_000)) { [unowned self] in
      recheck = nil
      do { try composeReady(context: context, final: false) } catch { context.fail(error) }
      admit(context: context)
    }
  }

  /// An input's ``TrackEnded``: it no longer holds slots back.
  public func handle(_ event: PipelineEvent, context: NodeContext<DecodedFrame>) throws {
    if case .custom(let payload) = event, let ended = payload as? TrackEnded {
      if let lane = lanes[ended.track] {
        lane.ended = true
        lane.endedAt = (lane.queue.last ?? lane.shown).flatMap { try? $0.time + $0.duration }
      }
      try composeReady(context: context, final: false)
      return admit(context: context)
    }
    context.send(event)
  }

  /// Whether slot `time` can be composed: an input still running has reached it (the slots never run
  /// ahead of the media), and every other running input has too, or lags more than ``maximumLag``
  /// behind the leader.
  private func ready(_ time: MediaTime, now: ClockInstant) -> Bool {
    let running = lanes.values.filter { !$0.ended }
    guard let leader = running.compactMap(\.frontier).max(), leader >= time else { return false }
    // Sources held back through ``admission`` stop near `maximumQueued`; pictures pushed past four times
    // that (sources that ignore it) no longer wait for a slower input: what is queued stays bounded.
    if lanes.values.contains(where: { $0.queue.count > 4 * Self.maximumQueued }) { return true }
    for lane in running {
      if let frontier = lane.frontier, frontier >= time { continue }
      // Stalled — more than the limit behind the leader, and nothing for as long on the pipeline's clock
      // (a live track that stops, not a file that decodes more slowly): not waited for.
      if let behind = try? leader - (lane.frontier ?? origin ?? leader), behind > maximumLag,
        let since = lane.arrival ?? firstArrival, now.microseconds - since.microseconds > stallTime.microseconds
      {
        continue
      }
      return false
    }
    return true
  }

  private func composeReady(context: NodeContext<DecodedFrame>, final: Bool) throws {
    guard origin != nil, firstArrival != nil else { return }
    let end = lanes.values.compactMap { lane in
      (lane.queue.last ?? lane.shown).flatMap { try? $0.time + $0.duration }
    }.max()
    while true {
      let time = try slot(next)
      if final {
        guard let end, time < end else { return }
      } else {
        // Once every input has ended, the end of stream composes the rest.
        guard lanes.values.contains(where: { !$0.ended }), ready(time, now: context.now) else { return }
      }
      // No input brings a picture for longer than `maximumHole` (their time jumped): the output has a
      // hole there instead of the same picture over and over.
      if let earliest = lanes.values.compactMap({ $0.queue.first?.time }).min(), let hole = try? earliest - time,
        hole > VideoMixer.maximumHole
      {
        next = try slotIndex(atOrAfter: earliest)
        continue
      }
      try compose(at: time, context: context)
      next += 1
    }
  }

  /// The first slot at or after `time` (after the origin).
  private func slotIndex(atOrAfter time: MediaTime) throws -> Int64 {
    guard let origin else { return 0 }
    let offset = try time - origin
    let seconds = offset.microseconds / 1_000_000
    let rest = offset.microseconds % 1_000_000
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: Int64(fps))
    guard !overflow else { throw MediaError(.invalidArgument, "\(time) is out of the mixer's range") }
    return whole + (rest * Int64(fps) + 999_999) / 1_000_000
  }

  private func compose(at time: MediaTime, context: NodeContext<DecodedFrame>) throws {
    let canvas = try PictureFitter.blackCanvas(width: width, height: height)
    for input in inputs {
      guard let lane = lanes[input] else { continue }
      while let first = lane.queue.first, first.time <= time {
        lane.shown = first
        lane.queue.removeFirst()
      }
      guard let shown = lane.shown else { continue }
      if lane.ended, let endedAt = lane.endedAt, let after = try? time - endedAt, after > holdAfterEnd { continue }
      try lane.fitter.draw(shown.frame, into: canvas, x: lane.cell.x, y: lane.cell.y)
    }
    composed += 1
    context.emit(
      DecodedFrame(track: output, time: time, duration: .microseconds(1_000_000 / Int64(fps)), frame: canvas))
  }

  /// Composes the slots up to the end of the last picture.
  public func finish(context: NodeContext<DecodedFrame>) throws {
    for lane in lanes.values where !lane.ended {
      lane.ended = true
      lane.endedAt = (lane.queue.last ?? lane.shown).flatMap { try? $0.time + $0.duration }
    }
    try composeReady(context: context, final: true)
  }
}
