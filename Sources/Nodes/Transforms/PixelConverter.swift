import PipelineGraph

/// Converts decoded pictures to a requested pixel format (and, optionally, size) with libswscale, so a
/// node that reads pixels gets the layout it expects; audio passes unchanged.
///
/// No stream state (a flush changes nothing); confined to its pipeline's executor.
public final class PixelConverter: Node {
  /// Consumes decoded frames.
  public typealias Input = DecodedFrame
  /// Emits them converted.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  private let scaler: PictureScaler

  /// Converts pictures to `format`, scaled to `width` × `height` when given.
  /// - Throws: ``MediaError`` `invalidArgument` for a format libswscale cannot write or a size outside
  ///   1…16384.
  public init(name: String = "PixelConverter", to format: PixelFormat, width: Int? = nil, height: Int? = nil) throws {
    self.name = name
    scaler = try PictureScaler(to: format, width: width, height: height)
  }

  /// Converts one picture; passes audio.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard input.track.kind == .video else { return context.emit(input) }
    if input.pixelFormat == scaler.format && scaler.width == nil && scaler.height == nil { return context.emit(input) }
    context.emit(
      DecodedFrame(
        track: input.track, time: input.time, duration: input.duration, frame: try scaler.convert(input.frame)))
  }
}
