internal import CFFmpeg
import PipelineGraph

/// libswscale converting pictures to one pixel format and, optionally, size. Owns its `SwsContext`
/// (reconfigured when the input's size or format changes).
final class PictureScaler {
  let format: PixelFormat
  let width: Int?
  let height: Int?
  private var context: OpaquePointer?
  private let target: AVPixelFormat

  init(to format: PixelFormat, width: Int?, height: Int?) throws {
    target = av_get_pix_fmt(format.description)
    guard target != AV_PIX_FMT_NONE, (1...16_384).contains(width ?? 1), (1...16_384).contains(height ?? 1) else {
      throw MediaError(.invalidArgument, "libswscale cannot make \(format) pictures of that size")
    }
    self.format = format
    self.width = width
    self.height = height
  }

  deinit { sws_freeContext(context) }

  /// `input` in the target format and size.
  func convert(_ input: FrameBuffer) throws -> FrameBuffer {
    let source = input.pointer
    let outWidth = width ?? Int(source.pointee.width)
    let outHeight = height ?? Int(source.pointee.height)
    context = sws_getCachedContext(
      context, source.pointee.width, source.pointee.height, AVPixelFormat(rawValue: source.pointee.format),
      Int32(outWidth), Int32(outHeight), target, SWS_BILINEAR, nil, nil, nil)
    guard let context else {
      throw MediaError(.unsupportedFormat, "libswscale cannot convert this picture to \(format)")
    }
    let output = try FrameBuffer()
    output.pointer.pointee.width = Int32(outWidth)
    output.pointer.pointee.height = Int32(outHeight)
    output.pointer.pointee.format = target.rawValue
    try FFmpeg.check(av_frame_get_buffer(output.pointer, 0), "allocating a picture", kind: .resourceExhausted)
    let out = output.pointer.pointee
    let rows = Self.scale(
      source, with: context, into: [out.data.0, out.data.1, out.data.2, out.data.3],
      strides: [out.linesize.0, out.linesize.1, out.linesize.2, out.linesize.3])
    try FFmpeg.check(rows, "converting a picture")
    return output
  }

  /// Scales the whole of `source` with `context` into the planes `planes` (`strides` bytes a row): a
  /// new picture's planes, or a rectangle inside a larger one. Returns sws_scale's result.
  static func scale(
    _ source: UnsafeMutablePointer<AVFrame>, with context: OpaquePointer, into planes: [UnsafeMutablePointer<UInt8>?],
    strides: [Int32]
  ) -> Int32 {
    let planes = planes + [UnsafeMutablePointer<UInt8>?](repeating: nil, count: max(0, 4 - planes.count))
    let strides = strides + [Int32](repeating: 0, count: max(0, 4 - strides.count))
    return withUnsafePointer(to: source.pointee.data) { sourceData in
      withUnsafePointer(to: source.pointee.linesize) { sourceLines in
        sourceData.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { inPlanes in
          sourceLines.withMemoryRebound(to: Int32.self, capacity: 8) { inStrides in
            planes.withUnsafeBufferPointer { outPlanes in
              strides.withUnsafeBufferPointer { outStrides in
                sws_scale(
                  context, inPlanes, inStrides, 0, source.pointee.height, outPlanes.baseAddress, outStrides.baseAddress)
              }
            }
          }
        }
      }
    }
  }
}
