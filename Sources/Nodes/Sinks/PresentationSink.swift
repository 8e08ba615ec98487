import PipelineGraph

/// The end of a Replay branch: hands each presented frame, each event and the end of stream to the
/// output that owns the branch (``VideoRenderer`` / ``AudioDevice`` behind a Video or Audio Output).
///
/// The closures run on the pipeline's executor, in order with the media, with the flush generation the
/// media belongs to (a seek's owner tells the frames after it from those before). No states beyond the
/// `Node` lifecycle: `onEnd` runs at each end of stream (again after a flush restarts the stream), `onFlush`
/// at each flush (an audio device drops what it holds from before the seek).
public final class PresentationSink: Node {
  /// Presented frames.
  public typealias Input = DecodedFrame
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  private let onFrame: (_ frame: DecodedFrame, _ generation: Int) -> Void
  private let onEvent: (_ event: MediaEvent, _ generation: Int) -> Void
  private let onEnd: (_ generation: Int) -> Void
  private let onFlush: () -> Void

  /// A sink that calls `onFrame` for each frame, `onEvent` for each gap or format change, `onEnd`
  /// when the stream has ended (after the last frame's presentation), and `onFlush` at each flush.
  public init(
    name: String, onFrame: @escaping (_ frame: DecodedFrame, _ generation: Int) -> Void,
    onEvent: @escaping (_ event: MediaEvent, _ generation: Int) -> Void = { _, _ in },
    onEnd: @escaping (_ generation: Int) -> Void = { _ in }, onFlush: @escaping () -> Void = {}
  ) {
    self.name = name
    self.onFrame = onFrame
    self.onEvent = onEvent
    self.onEnd = onEnd
    self.onFlush = onFlush
  }

  /// Hands the frame on.
  public func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    onFrame(input, context.generation)
  }

  /// Hands typed media events on.
  public func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    onEvent(try MediaEvent(event), context.generation)
  }

  /// The stream ended.
  public func finish(context: NodeContext<Never>) throws { onEnd(context.generation) }

  /// A flush passed (a seek).
  public func flush(context: NodeContext<Never>) { onFlush() }
}
