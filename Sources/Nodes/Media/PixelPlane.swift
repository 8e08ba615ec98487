/// One plane of a decoded picture (Y, U, V, interleaved UV or packed pixels), readable only inside the
/// closure that received it (``FrameBuffer/withPlanes(_:)``).
public struct PixelPlane {
  /// Bytes of pixel data in a row (a `yuv420p` chroma plane of a 320-pixel picture: 160).
  public let bytesPerLine: Int
  /// Rows.
  public let height: Int
  /// Distance in bytes from one row to the next (at least `bytesPerLine`; rows are padded).
  public let stride: Int
  private let base: UnsafeRawPointer

  init(base: UnsafeRawPointer, bytesPerLine: Int, height: Int, stride: Int) {
    self.base = base
    self.bytesPerLine = bytesPerLine
    self.height = height
    self.stride = stride
  }

  /// Row `y`'s `bytesPerLine` bytes.
  /// - Precondition: `0 <= y < height`.
  public func row(_ y: Int) -> UnsafeRawBufferPointer {
    precondition(y >= 0 && y < height, "row \(y) of a \(height)-row plane")
    return UnsafeRawBufferPointer(start: base + y * stride, count: bytesPerLine)
  }

  /// The byte at column `x` of row `y`.
  public subscript(x: Int, y: Int) -> UInt8 {
    precondition(x >= 0 && x < bytesPerLine, "column \(x) of a \(bytesPerLine)-byte row")
    return row(y)[x]
  }
}
