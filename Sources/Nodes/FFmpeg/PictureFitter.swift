internal import CFFmpeg
import PipelineGraph

/// libswscale fitting pictures inside a fixed yuv420p canvas: the picture keeps its display aspect
/// (its sample aspect ratio counted), is scaled to the largest even size that fits and centred, and the
/// bars around it are black (Y 16, Cb/Cr 128). Owns its `SwsContext`.
final class PictureFitter {
  let width: Int
  let height: Int
  private var context: OpaquePointer?
  private var lastScratch: FrameBuffer?

  init(width: Int, height: Int) throws {
    guard (2...16_384).contains(width), (2...16_384).contains(height), width % 2 == 0, height % 2 == 0 else {
      throw MediaError(.invalidArgument, "video size \(width)x\(height) must be positive, even and at most 16384")
    }
    self.width = width
    self.height = height
  }

  deinit { sws_freeContext(context) }

  /// Where a picture of `sourceWidth`×`sourceHeight` with sample aspect `sar` goes inside the canvas:
  /// origin and size, all even.
  static func placement(
    sourceWidth: Int, sourceHeight: Int, sar: (Int, Int), width: Int, height: Int
  ) -> (x: Int, y: Int, width: Int, height: Int) {
    let (num, den) = sar.0 > 0 && sar.1 > 0 ? sar : (1, 1)
    // Display width over height, as a ratio of integers (no rounding until the end).
    let displayWidth = Int64(sourceWidth) * Int64(num)
    let displayHeight = Int64(sourceHeight) * Int64(den)
    var w: Int
    var h: Int
    if displayWidth * Int64(height) >= displayHeight * Int64(width) {
      w = width
      h = Int((Int64(width) * displayHeight + displayWidth / 2) / max(1, displayWidth))
    } else {
      h = height
      w = Int((Int64(height) * displayWidth + displayHeight / 2) / max(1, displayHeight))
    }
    w = max(2, min(width, w & ~1))
    h = max(2, min(height, h & ~1))
    return (((width - w) / 2) & ~1, ((height - h) / 2) & ~1, w, h)
  }

  /// `input` fitted inside a new black canvas.
  func fit(_ input: FrameBuffer) throws -> FrameBuffer {
    let canvas = try Self.blackCanvas(width: width, height: height)
    try draw(input, into: canvas, x: 0, y: 0)
    return canvas
  }

  /// A new yuv420p picture of `width`×`height`, black (Y 16, Cb/Cr 128).
  static func blackCanvas(width: Int, height: Int) throws -> FrameBuffer {
    let output = try FrameBuffer()
    let out = output.pointer
    out.pointee.width = Int32(width)
    out.pointee.height = Int32(height)
    out.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    out.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
    try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating a picture", kind: .resourceExhausted)
    let strides = [Int(out.pointee.linesize.0), Int(out.pointee.linesize.1), Int(out.pointee.linesize.2)]
    out.pointee.data.0!.update(repeating: 16, count: strides[0] * height)
    out.pointee.data.1!.update(repeating: 128, count: strides[1] * ((height + 1) / 2))
    out.pointee.data.2!.update(repeating: 128, count: strides[2] * ((height + 1) / 2))
    return output
  }

  /// Fills the `width`×`height` rectangle at (`x`, `y`) of `canvas` (yuv420p, even coordinates) with
  /// black.
  static func clear(_ canvas: FrameBuffer, x: Int, y: Int, width: Int, height: Int) {
    let out = canvas.pointer
    let strides = [Int(out.pointee.linesize.0), Int(out.pointee.linesize.1), Int(out.pointee.linesize.2)]
    for row in y..<(y + height) {
      (out.pointee.data.0! + row * strides[0] + x).update(repeating: 16, count: width)
    }
    for row in (y / 2)..<((y + height) / 2) {
      (out.pointee.data.1! + row * strides[1] + x / 2).update(repeating: 128, count: width / 2)
      (out.pointee.data.2! + row * strides[2] + x / 2).update(repeating: 128, count: width / 2)
    }
  }

  /// Draws `input` fitted inside this fitter's size at (`x`, `y`) of `canvas` (yuv420p, large enough,
  /// even coordinates); the rest of that rectangle is left as it is.
  func draw(_ input: FrameBuffer, into canvas: FrameBuffer, x: Int, y: Int) throws {
    let source = input.pointer
    let sar = source.pointee.sample_aspect_ratio
    let place = Self.placement(
      sourceWidth: Int(source.pointee.width), sourceHeight: Int(source.pointee.height),
      sar: (Int(sar.num), Int(sar.den)), width: width, height: height)
    context = sws_getCachedContext(
      context, source.pointee.width, source.pointee.height, AVPixelFormat(rawValue: source.pointee.format),
      Int32(place.width), Int32(place.height), AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil)
    guard let context else { throw MediaError(.unsupportedFormat, "libswscale cannot scale this picture") }
    // libswscale may write a line past its width, up to its vector size (a 180-pixel line as 192): into a
    // rectangle of the canvas that overwrote the bar beside it (or a neighbouring cell) with a stripe.
    // So it scales into a picture of its own, whose lines have room, and the rows are copied.
    let scaled = try scratch(width: place.width, height: place.height)
    let from = scaled.pointer
    let fromStrides = [Int(from.pointee.linesize.0), Int(from.pointee.linesize.1), Int(from.pointee.linesize.2)]
    let rows = PictureScaler.scale(
      source, with: context, into: [from.pointee.data.0, from.pointee.data.1, from.pointee.data.2],
      strides: fromStrides.map(Int32.init))
    try FFmpeg.check(rows, "scaling a picture")
    let out = canvas.pointer
    let strides = [Int(out.pointee.linesize.0), Int(out.pointee.linesize.1), Int(out.pointee.linesize.2)]
    let (left, top) = ((x + place.x) & ~1, (y + place.y) & ~1)
    let sources = [from.pointee.data.0!, from.pointee.data.1!, from.pointee.data.2!]
    let targets = [
      out.pointee.data.0! + top * strides[0] + left,
      out.pointee.data.1! + top / 2 * strides[1] + left / 2,
      out.pointee.data.2! + top / 2 * strides[2] + left / 2,
    ]
    for plane in 0..<3 {
      // The placement is even: chroma is exactly half each way.
      let (width, height) = plane == 0 ? (place.width, place.height) : (place.width / 2, place.height / 2)
      for row in 0..<height {
        (targets[plane] + row * strides[plane]).update(from: sources[plane] + row * fromStrides[plane], count: width)
      }
    }
  }

  /// A yuv420p picture of `width`×`height` to scale into: the last one again when it has that size (it
  /// never leaves this fitter).
  private func scratch(width: Int, height: Int) throws -> FrameBuffer {
    if let last = lastScratch, last.width == width, last.height == height { return last }
    let picture = try FrameBuffer()
    picture.pointer.pointee.width = Int32(width)
    picture.pointer.pointee.height = Int32(height)
    picture.pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    try FFmpeg.check(av_frame_get_buffer(picture.pointer, 0), "allocating a picture", kind: .resourceExhausted)
    lastScratch = picture
    return picture
  }
}
