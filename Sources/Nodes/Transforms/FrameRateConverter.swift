import PipelineGraph

/// Makes a video stream's frame rate constant: output pictures at `start + n / fps` (the start being the
/// first picture's time), each the latest input picture shown at or before that instant — pictures
/// repeated when the input is slower, dropped when it is faster. Every output lasts `1 / fps`.
///
/// A hole in the input (a `gap`, or pictures that stop coming) is filled by repeating the last picture
/// up to the next picture's time; the end of the stream emits the slots the last picture covers (its own
/// duration). Time that goes back is ignored (the picture replaces the held one). Audio frames pass
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

  /// A converter to `fps` pictures per second (1…240), its first slot at `origin` (the first picture
  /// fills the slots before it comes: a recording whose sound starts first has a picture from its
  /// start) or, without one, at the first picture.
  /// - Throws: ``TiError`` `invalidArgument` outside that range.
  public init(name: String = "FrameRateConverter", fps: Int, origin: MediaTime? = nil) throws {
    guard (1...240).contains(fps) else { throw TiError(.invalidArgument, "a frame rate of \(fps) is not 1…240") }
    self.name = name
    self.fps = fps
    self.origin = origin
  }

  private var slotDuration: MediaDuration { .microseconds(1_000_000 / Int64(fps)) }

  private func slot(_ index: Int64) throws -> MediaTime {
    guard let start else { return MediaTime(microseconds: 0) }
    // Exact: index × 1 s / fps, rounded once (no drift over hours).
    let (product, overflow) = index.multipliedReportingOverflow(by: 1_000_000)
    guard !overflow else { throw TiError(.invalidArgument, "frame slot \(index) is outside the representable time") }
    return try start + .microseconds(product / Int64(fps))
  }

  /// Places one picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.frame.width > 0 else { return context.emit(input) }
    guard start != nil else {
      start = origin.map { min($0, input.time) } ?? input.time
      held = input
      heldEmitted = false
      return
    }
    try emitSlots(before: input.time, context: context)
    if let held, !heldEmitted, held !== input { dropped += 1 }
    held = input
    heldEmitted = false
  }

  /// Emits the held picture in every slot before `time`.
  private func emitSlots(before time: MediaTime, context: NodeContext<DecodedFrame>) throws {
    guard let held else { return }
    while try slot(next) < time {
      let at = try slot(next)
      if heldEmitted { repeated += 1 }
      context.emit(DecodedFrame(track: held.track, time: at, duration: slotDuration, frame: held.frame))
      heldEmitted = true
      next += 1
    }
  }

  /// Emits the slots the last picture covers.
  public func finish(context: NodeContext<DecodedFrame>) throws {
    guard let held else { return }
    let end = (try? held.time + held.duration) ?? held.time
    try emitSlots(before: max(end, (try? held.time + .microseconds(1)) ?? end), context: context)
  }

  /// Starts again at the next picture.
  public func flush(context: NodeContext<DecodedFrame>) {
    start = nil
    next = 0
    held = nil
  }
}
