import PipelineGraph

/// The end of a Replay branch: hands each presented frame, each event and the end of stream to the
/// output that owns the branch (``VideoRenderer`` / ``AudioDevice`` behind a Video or Audio Output).
///
/// The closures run on the pipeline's executor, in order with the media. No states beyond the `Node`
/// lifecycle: `onEnd` runs at each end of stream (again after a flush restarts the stream).
public final class PresentationSink: Node {
  /// Presented frames.
  public typealias Input = DecodedFrame
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  private let onFrame: (DecodedFrame) -> Void
  private let onEvent: (MediaEvent) -> Void
  private let onEnd: () -> Void

  /// A sink that calls `onFrame` for each frame, `onEvent` for each gap or format change, and `onEnd`
  /// when the stream has ended (after the last frame's presentation).
  public init(
    name: String, onFrame: @escaping (DecodedFrame) -> Void, onEvent: @escaping (MediaEvent) -> Void = { _ in },
    onEnd: @escaping () -> Void = {}
  ) {
    self.name = name
    self.onFrame = onFrame
    self.onEvent = onEvent
    self.onEnd = onEnd
  }

  /// Hands the frame on.
  public func process(_ input: DecodedFrame, context: NodeContext<Never>) throws { onFrame(input) }

  /// Hands typed media events on.
  public func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    onEvent(try MediaEvent(event))
  }

  /// The stream ended.
  public func finish(context: NodeContext<Never>) throws { onEnd() }
}
