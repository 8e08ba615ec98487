import PipelineGraph

/// Shows pictures upright: lays every picture down as its source says (``TrackFormat/turn``, a phone's
/// recording whose container says how to show it), as a player does — before anything that looks at
/// the picture's shape (a recorder fitting it inside a size, a compositor's grid, a window).
///
/// Each picture leaves at its own time and duration. Audio frames pass unchanged.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class VideoRotator: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// Emits them turned.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// How the pictures are laid down.
  public let turn: PictureTurn
  private let rotator: PictureRotator

  /// A rotator that lays pictures down as `turn` says (what ``TrackFormat/turn`` gives).
  public init(name: String = "VideoRotator", turn: PictureTurn) {
    self.name = name
    self.turn = turn
    rotator = PictureRotator(turn: turn)
  }

  /// Turns one picture.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.frame.width > 0 else { return context.emit(input) }
    let turned = try rotator.rotate(input.frame)
    context.emit(DecodedFrame(track: input.track, time: input.time, duration: input.duration, frame: turned))
  }
}
