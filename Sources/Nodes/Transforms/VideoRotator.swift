import PipelineGraph

/// Shows pictures upright: turns every picture by its source's rotation (``TrackFormat/rotation``, a
/// phone's recording whose container says how to show it), as a player does — before anything that
/// looks at the picture's shape (a recorder fitting it inside a size, a compositor's grid, a window).
///
/// Each picture leaves at its own time and duration; a picture that is the same buffer as the one
/// before is turned once. Audio frames pass unchanged.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class VideoRotator: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// Emits them turned.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// The clockwise turn in degrees: 90, 180 or 270.
  public let degrees: Int
  private let rotator: PictureRotator
  private var last: (source: FrameBuffer, turned: FrameBuffer)?

  /// A rotator by `degrees` clockwise (90, 180 or 270: what ``TrackFormat/rotation`` says when it is
  /// not 0).
  /// - Throws: ``MediaError`` `invalidArgument` for another angle.
  public init(name: String = "VideoRotator", degrees: Int) throws {
    self.name = name
    self.degrees = degrees
    rotator = try PictureRotator(degrees: degrees)
  }

  /// Turns one picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.frame.width > 0 else { return context.emit(input) }
    let turned: FrameBuffer
    if let last, last.source === input.frame {
      turned = last.turned
    } else {
      turned = try rotator.rotate(input.frame)
      last = (input.frame, turned)
    }
    context.emit(DecodedFrame(track: input.track, time: input.time, duration: input.duration, frame: turned))
  }

  /// Forgets the cached picture.
  public func flush(context: NodeContext<DecodedFrame>) { last = nil }
}
