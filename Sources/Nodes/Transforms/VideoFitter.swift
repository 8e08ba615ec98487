import PipelineGraph

/// Fits every picture inside a fixed size (yuv420p): scaled to keep its display aspect, centred, with
/// black bars, never stretched — what a recorder of a fixed size does with sources of any size.
///
/// Each picture leaves at its own time and duration. A picture that is the same buffer as the one
/// before (a frame-rate converter repeating it) is fitted once. Audio frames pass unchanged.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class VideoFitter: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// Emits pictures of ``width``×``height``.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// The output width.
  public let width: Int
  /// The output height.
  public let height: Int
  private let fitter: PictureFitter
  private var last: (source: FrameBuffer, fitted: FrameBuffer)?

  /// A fitter to `width`×`height` (positive and even).
  /// - Throws: ``MediaError`` `invalidArgument` for an odd, empty or huge size.
  public init(name: String = "VideoFitter", width: Int, height: Int) throws {
    self.name = name
    self.width = width
    self.height = height
    fitter = try PictureFitter(width: width, height: height)
  }

  /// Fits one picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.frame.width > 0 else { return context.emit(input) }
    let fitted: FrameBuffer
    if let last, last.source === input.frame {
      fitted = last.fitted
    } else {
      fitted = try fitter.fit(input.frame)
      last = (input.frame, fitted)
    }
    context.emit(DecodedFrame(track: input.track, time: input.time, duration: input.duration, frame: fitted))
  }

  /// Forgets the cached picture.
  public func flush(context: NodeContext<DecodedFrame>) { last = nil }
}
