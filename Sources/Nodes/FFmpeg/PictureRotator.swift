internal import CFFmpeg
import PipelineGraph

/// Lays pictures down as a ``PictureTurn`` says: what a player does with a phone's recording whose
/// container says how to show it (ffmpeg's autorotation: `transpose`, `hflip`, `vflip`). Pixels are
/// moved, not resampled: every format whose planes hold whole pixels of a fixed size and whose chroma
/// is subsampled alike both ways (4:2:0, 4:4:4, NV12, grey, packed RGB, 8 or 16 bits) keeps its format;
/// any other (4:2:2, palettes) is converted to yuv420p first, since a turned 4:2:2 picture would be
/// 4:4:0.
final class PictureRotator {
  /// How the pictures are laid down.
  let turn: PictureTurn
  private var converter: PictureScaler?

  /// A rotator that lays pictures down as `turn` says.
  init(turn: PictureTurn) { self.turn = turn }

  /// `input` turned, in a new picture (its colour properties kept; its sample aspect turned with it).
  func rotate(_ input: FrameBuffer) throws -> FrameBuffer {
    var source = input
    if !Self.turnsInPlace(AVPixelFormat(rawValue: input.pointer.pointee.format)) {
      let converter = try self.converter ?? PictureScaler(to: PixelFormat(name: "yuv420p"), width: nil, height: nil)
      self.converter = converter
      source = try converter.convert(input)
    }
    let quarter = turn.swapsSides
    let from = source.pointer
    let output = try FrameBuffer()
    let out = output.pointer
    out.pointee.width = quarter ? from.pointee.height : from.pointee.width
    out.pointee.height = quarter ? from.pointee.width : from.pointee.height
    out.pointee.format = from.pointee.format
    try FFmpeg.check(av_frame_get_buffer(out, 0), "allocating a picture", kind: .resourceExhausted)
    // How the colours are read is kept (no side data: a display matrix is applied by the turn itself);
    // the pixels' shape turns with the picture. Read from the decoded picture, not from its conversion
    // (libswscale's output carries none of them).
    let original = input.pointer
    // A conversion to yuv420p made studio range of a full-range format (yuvj): its range is its own.
    out.pointee.color_range = source === input ? original.pointee.color_range : from.pointee.color_range
    out.pointee.colorspace = original.pointee.colorspace
    out.pointee.color_primaries = original.pointee.color_primaries
    out.pointee.color_trc = original.pointee.color_trc
    let aspect = original.pointee.sample_aspect_ratio
    // An unknown aspect (0/1) stays unknown; a known one turns with the picture.
    out.pointee.sample_aspect_ratio =
      quarter && aspect.num > 0 && aspect.den > 0 ? AVRational(num: aspect.den, den: aspect.num) : aspect
    guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: from.pointee.format)) else {
      throw MediaError(.unsupportedFormat, "a picture of an unknown pixel format cannot be turned")
    }
    let sourcePlanes = Self.planes(of: from)
    let outputPlanes = Self.planes(of: out)
    for plane in 0..<Self.planeCount(descriptor) {
      guard let unit = Self.unit(ofPlane: plane, descriptor), let input = sourcePlanes[plane].data,
        let output = outputPlanes[plane].data
      else { continue }
      let chroma = Self.isChroma(plane: plane, descriptor)
      let shift = (
        width: chroma ? Int(descriptor.pointee.log2_chroma_w) : 0,
        height: chroma ? Int(descriptor.pointee.log2_chroma_h) : 0
      )
      // Chroma rows and columns round up (a 5-pixel-wide 4:2:0 picture has 3 chroma columns).
      let width = -((-Int(from.pointee.width)) >> shift.width)
      let height = -((-Int(from.pointee.height)) >> shift.height)
      Self.turn(
        input, stride: sourcePlanes[plane].stride, width: width, height: height, unit: unit, into: output,
        stride: outputPlanes[plane].stride, turn: turn)
    }
    return output
  }

  /// True when `format`'s planes hold whole pixels of one size each and its chroma is subsampled alike
  /// both ways: turning moves pixels and the format stays.
  static func turnsInPlace(_ format: AVPixelFormat) -> Bool {
    guard let descriptor = av_pix_fmt_desc_get(format) else { return false }
    let refused = UInt64(AV_PIX_FMT_FLAG_BITSTREAM) | UInt64(AV_PIX_FMT_FLAG_PAL) | UInt64(AV_PIX_FMT_FLAG_HWACCEL)
    guard descriptor.pointee.flags & refused == 0,
      descriptor.pointee.log2_chroma_w == descriptor.pointee.log2_chroma_h
    else { return false }
    let planes = planeCount(descriptor)
    return planes > 0 && (0..<planes).allSatisfy { unit(ofPlane: $0, descriptor) != nil }
  }

  /// The planes a picture of the format has: one past the highest plane a component is in.
  private static func planeCount(_ descriptor: UnsafePointer<AVPixFmtDescriptor>) -> Int {
    components(descriptor).map { Int($0.plane) + 1 }.max() ?? 0
  }

  /// The format's components (luma or R, chroma or G and B, alpha).
  private static func components(_ descriptor: UnsafePointer<AVPixFmtDescriptor>) -> [AVComponentDescriptor] {
    let all = withUnsafeBytes(of: descriptor.pointee.comp) { Array($0.bindMemory(to: AVComponentDescriptor.self)) }
    return Array(all.prefix(Int(descriptor.pointee.nb_components)))
  }

  /// The bytes of one pixel in `plane`: the step its components share (nil when they differ, or for a
  /// plane without components).
  private static func unit(ofPlane plane: Int, _ descriptor: UnsafePointer<AVPixFmtDescriptor>) -> Int? {
    let steps = components(descriptor).filter { Int($0.plane) == plane }.map { Int($0.step) }
    guard let step = steps.first, step > 0, steps.allSatisfy({ $0 == step }) else { return nil }
    return step
  }

  /// True when `plane` holds chroma (subsampled) rather than luma, alpha or RGB.
  private static func isChroma(plane: Int, _ descriptor: UnsafePointer<AVPixFmtDescriptor>) -> Bool {
    guard descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) == 0, descriptor.pointee.nb_components >= 3 else {
      return false
    }
    let components = components(descriptor)
    return Int(components[1].plane) == plane || Int(components[2].plane) == plane
  }

  /// The planes' pointers and strides.
  private static func planes(of frame: UnsafeMutablePointer<AVFrame>) -> [(
    data: UnsafeMutablePointer<UInt8>?, stride: Int
  )] {
    let data = frame.pointee.data
    let lines = frame.pointee.linesize
    return [
      (data.0, Int(lines.0)), (data.1, Int(lines.1)), (data.2, Int(lines.2)), (data.3, Int(lines.3)),
    ]
  }

  /// Lays one plane of `width`×`height` pixels of `unit` bytes down into `output` (`height`×`width`
  /// when the turn swaps the sides), row after row: along an output row the source moves by a constant
  /// step, so each row is one walk through the input.
  static func turn(
    _ input: UnsafePointer<UInt8>, stride inStride: Int, width: Int, height: Int, unit: Int,
    into output: UnsafeMutablePointer<UInt8>, stride outStride: Int, turn: PictureTurn
  ) {
    let (outWidth, outHeight) = turn.swapsSides ? (height, width) : (width, height)
    guard outWidth > 0, outHeight > 0 else { return }
    let offset = { (point: (x: Int, y: Int)) in point.y * inStride + point.x * unit }
    for y in 0..<outHeight {
      let first = offset(turn.source(ofX: 0, y: y, width: width, height: height))
      let step = outWidth > 1 ? offset(turn.source(ofX: 1, y: y, width: width, height: height)) - first : 0
      let row = output + y * outStride
      var from = input + first
      switch unit {
      case 1:
        for x in 0..<outWidth {
          row[x] = from.pointee
          from += step
        }
      case 2:
        for x in 0..<outWidth {
          row[x * 2] = from[0]
          row[x * 2 + 1] = from[1]
          from += step
        }
      default:
        for x in 0..<outWidth {
          (row + x * unit).update(from: from, count: unit)
          from += step
        }
      }
    }
  }
}
