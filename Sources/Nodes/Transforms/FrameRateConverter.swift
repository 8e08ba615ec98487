import PipelineGraph

/// Makes a video stream's frame rate constant: output pictures at `start + n / fps` (the start being the
/// first picture's time), each picture in the slot nearest its own time, as ffmpeg's `fps` filter puts it
/// (a slot takes the last picture that rounds to it, or holds the one before) — pictures repeated when
/// the input is slower, dropped when it is faster, none first shown more than half a slot from its time.
/// Every output lasts `1 / fps`.
///
/// A hole in the input (a `gap`, or pictures that stop coming) is filled by repeating the last picture
/// up to the next picture's time, for at most ``maximumHole``: past it (a camera that came back after a
/// minute, a clock that jumped by days) the stream has a hole and the slots start again at the next
/// picture, so no input makes the converter repeat a picture without bound. The end of the stream emits
/// the slots the last picture covers (its own duration, rounded to the nearest slot). Time that goes back is ignored (the picture replaces the held one). Audio frames pass
/// unchanged. A flush starts again at the next picture.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class FrameRateConverter: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// Emits pictures at a constant rate.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// Output pictures per second.
  public let fps: Int
  private var start: MediaTime?
  /// The next slot's index.
  private var next: Int64 = 0
  private var held: DecodedFrame?
  /// Pictures emitted more than once, and input pictures never emitted.
  public private(set) var repeated = 0
  /// Input pictures dropped (a faster input).
  public private(set) var dropped = 0
  private var heldEmitted = false

  /// Where the first slot lies (nil: at the first picture).
  public let origin: MediaTime?

  /// The longest hole filled by repeating a picture (10 s).
  public static let maximumHole = MediaDuration.microseconds(10_000_000)
  /// How long after ``origin`` the first picture may come and still fill the slots before it.
  public let maximumLead: MediaDuration

  /// A converter to `fps` pictures per second (1…240), its first slot at `origin` (the first picture
  /// fills the slots before it comes when it comes within `maximumLead` of it — ``maximumHole`` unless
  /// said: a recording whose sound starts first has a picture from its start) or, without one, at the
  /// first picture.
  /// - Throws: ``MediaError`` `invalidArgument` outside that range.
  public init(
    name: String = "FrameRateConverter", fps: Int, origin: MediaTime? = nil,
    maximumLead: MediaDuration = FrameRateConverter.maximumHole
  ) throws {
    guard (1...240).contains(fps) else { throw MediaError(.invalidArgument, "a frame rate of \(fps) is not 1…240") }
    self.name = name
    self.fps = fps
    self.origin = origin
    self.maximumLead = maximumLead
  }

  private var slotDuration: MediaDuration { .microseconds(1_000_000 / Int64(fps)) }
  private var halfSlot: MediaDuration { .microseconds(500_000 / Int64(fps)) }

  private func slot(_ index: Int64) throws -> MediaTime {
    guard let start else { return MediaTime(microseconds: 0) }
    // Exact: index × 1 s / fps, rounded once (no drift over hours).
    let (product, overflow) = index.multipliedReportingOverflow(by: 1_000_000)
    guard !overflow else { throw MediaError(.invalidArgument, "frame slot \(index) is outside the representable time") }
    return try start + .microseconds(product / Int64(fps))
  }

  /// Places one picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.frame.width > 0 else { return context.emit(input) }
    guard start != nil else {
      // The first picture fills the slots from the origin when it comes within `maximumLead` of it (a
      // picture that starts a day after the sound starts the slots itself).
      if let origin, let lead = try? input.time - origin, lead <= maximumLead {
        start = min(origin, input.time)
      } else {
        start = input.time
      }
      held = input
      heldEmitted = false
      return
    }
    // The hole runs from the held picture (or the slot after it): the first picture's lead is no hole.
    if let held, let hole = try? input.time - max(slot(next), held.time), hole > Self.maximumHole {
      // Too long to fill: the held picture keeps its own slots, and the next picture starts the slots again.
      try emitSlots(before: min(input.time, try coverageEnd(of: held)), context: context)
      start = input.time
      next = 0
    } else {
      // The held picture fills the slots nearer to it than to this one (up to half a slot before this
      // one's time: a picture halfway between two slots goes to the later, as ffmpeg rounds half away
      // from zero).
      try emitSlots(through: (try? input.time - halfSlot) ?? input.time, context: context)
    }
    if let held, !heldEmitted, held !== input { dropped += 1 }
    held = input
    heldEmitted = false
  }

  /// Emits the held picture in every slot before `time`.
  private func emitSlots(before time: MediaTime, context: NodeContext<DecodedFrame>) throws {
    try emitSlots(through: MediaTime(microseconds: time.microseconds - 1), context: context)
  }

  /// Emits the held picture in every slot at or before `time`.
  private func emitSlots(through time: MediaTime, context: NodeContext<DecodedFrame>) throws {
    guard let held else { return }
    while try slot(next) <= time {
      let at = try slot(next)
      if heldEmitted { repeated += 1 }
      context.emit(DecodedFrame(track: held.track, time: at, duration: slotDuration, frame: held.frame))
      heldEmitted = true
      next += 1
    }
  }

  /// Emits the slots the last picture covers: those starting up to half a slot before its end, as
  /// ffmpeg's `fps` filter rounds the end of its input to the nearest slot — and one, were it the only
  /// picture and shorter than that (a file whose picture is one still keeps it).
  public func finish(context: NodeContext<DecodedFrame>) throws {
    guard let held else { return }
    let end = try coverageEnd(of: held)
    var last = (try? end - halfSlot) ?? end
    if next == 0 { last = max(last, try slot(next)) }
    try emitSlots(through: last, context: context)
  }

  /// Where a picture's own slots end: its duration (at least an instant, at most ``maximumHole``).
  private func coverageEnd(of picture: DecodedFrame) throws -> MediaTime {
    let length = min(max(picture.duration, .microseconds(1)), Self.maximumHole)
    return (try? picture.time + length) ?? picture.time
  }

  /// Starts again at the next picture.
  public func flush(context: NodeContext<DecodedFrame>) {
    start = nil
    next = 0
    held = nil
  }
}
