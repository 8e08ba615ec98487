import Nodes
import PipelineGraph

/// How much a picture's brightness changed from the one before: the mean absolute difference of their
/// luma samples, 0…255 (a cheap measure of motion).
public final class LumaDifference: Node {
  /// Consumes decoded frames (pictures in a YUV format or gray; audio is ignored).
  public typealias Input = DecodedFrame
  /// Emits one change per picture after the first.
  public typealias Output = LumaChange

  /// The node's name.
  public let name = "LumaDifference"
  private var previous: [UInt8]?

  /// Creates the node.
  public init() {}

  /// Compares the picture with the one before.
  public func process(_ input: DecodedFrame, context: NodeContext<LumaChange>) throws {
    guard input.track.kind == .video else { return }
    guard let format = input.pixelFormat, [.yuv420p, .yuvj420p, .nv12, .gray8].contains(format) else {
      throw MediaError(.unsupportedFormat, "LumaDifference reads luma planes; put a PixelConverter before it")
    }
    let luma = input.withPlanes { planes in
      var samples: [UInt8] = []
      samples.reserveCapacity(planes[0].bytesPerLine * planes[0].height)
      for y in 0..<planes[0].height { samples.append(contentsOf: planes[0].row(y)) }
      return samples
    }
    defer { previous = luma }
    guard let previous, previous.count == luma.count, !luma.isEmpty else { return }
    var total = 0
    for index in luma.indices { total += abs(Int(luma[index]) - Int(previous[index])) }
    context.emit(LumaChange(time: input.time, difference: Double(total) / Double(luma.count)))
  }

  /// A seek: the next picture has nothing to compare with.
  public func flush(context: NodeContext<LumaChange>) { previous = nil }
}

/// A picture's change of brightness from the one before.
public struct LumaChange: Sendable, Equatable {
  /// The picture's time.
  public let time: MediaTime
  /// Mean absolute luma difference, 0…255.
  public let difference: Double

  /// A change of `difference` at `time`.
  public init(time: MediaTime, difference: Double) {
    self.time = time
    self.difference = difference
  }
}
