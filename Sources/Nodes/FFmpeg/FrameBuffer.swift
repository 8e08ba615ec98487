internal import CFFmpeg
import Foundation
import PipelineGraph

/// A decoded picture or block of audio samples: one `AVFrame`, owned by this object and freed in
/// `deinit`. Its pixels and samples are read through ``withPlanes(_:)`` and ``withSamples(_:)``; a frame
/// is never written once it left the node that made it.
///
/// States: filled by the node that makes it → immutable once emitted, when any thread may read it.
public final class FrameBuffer: @unchecked Sendable {
  // The pointer is owned exclusively; after a frame is emitted it is only read, so sharing it between
  // branches (fan-out) is safe.
  /// The frame (read it; do not free it or keep it beyond this object).
  let pointer: UnsafeMutablePointer<AVFrame>

  /// Allocates an empty frame.
  public init() throws {
    guard let pointer = av_frame_alloc() else { throw MediaError(.resourceExhausted, "av_frame_alloc failed") }
    self.pointer = pointer
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVFrame>? = pointer
    av_frame_free(&pointer)
  }

  /// Width in pixels (video).
  public var width: Int { Int(pointer.pointee.width) }
  /// Height in pixels (video).
  public var height: Int { Int(pointer.pointee.height) }
  /// The shape of one pixel, width over height (the sample aspect ratio): a picture of `width` ×
  /// `height` is shown `width × pixelAspect` wide. 1 for square pixels and when the stream does not say.
  public var pixelAspect: Double {
    let aspect = pointer.pointee.sample_aspect_ratio
    return aspect.num > 0 && aspect.den > 0 ? Double(aspect.num) / Double(aspect.den) : 1
  }
  /// Samples per channel (audio).
  public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
  /// Audio channels (0 for video).
  public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
  /// Samples per second (audio; 0 for video).
  public var sampleRate: Int { Int(pointer.pointee.sample_rate) }

  /// The picture's pixel format; nil for audio.
  public var pixelFormat: PixelFormat? {
    guard pointer.pointee.width > 0, pointer.pointee.format >= 0,
      let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: pointer.pointee.format))
    else { return nil }
    return PixelFormat(name: String(cString: name))
  }

  /// Runs `body` with the picture's planes (none for audio). The planes are valid only inside `body`.
  public func withPlanes<Result>(_ body: ([PixelPlane]) throws -> Result) rethrows -> Result {
    let frame = pointer.pointee
    guard frame.width > 0, frame.height > 0, frame.format >= 0 else { return try body([]) }
    let format = AVPixelFormat(rawValue: frame.format)
    var planes: [PixelPlane] = []
    withUnsafePointer(to: frame.linesize) { lines in
      lines.withMemoryRebound(to: Int32.self, capacity: 8) { linesize in
        withUnsafePointer(to: frame.data) { data in
          data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
            // Bytes per row and rows of each plane, from the format's description.
            var widths = [Int](repeating: 0, count: 4)
            var heights = [Int](repeating: 0, count: 4)
            guard let descriptor = av_pix_fmt_desc_get(format) else { return }
            // Chroma planes (1 and 2) are subsampled: their rows round up.
            let chromaHeight = -((-Int(frame.height)) >> Int(descriptor.pointee.log2_chroma_h))
            for plane in 0..<4 {
              widths[plane] = Int(max(0, av_image_get_linesize(format, frame.width, Int32(plane))))
              heights[plane] = plane == 1 || plane == 2 ? chromaHeight : Int(frame.height)
            }
            for plane in 0..<4 {
              guard let base = data[plane], linesize[plane] > 0, widths[plane] > 0 else { continue }
              planes.append(
                PixelPlane(
                  base: UnsafeRawPointer(base), bytesPerLine: min(widths[plane], Int(linesize[plane])),
                  height: heights[plane], stride: Int(linesize[plane])))
            }
          }
        }
      }
    }
    return try body(planes)
  }

  /// Runs `body` with the audio samples (nil for a picture). The samples are valid only inside `body`.
  public func withSamples<Result>(_ body: (AudioSamples?) throws -> Result) rethrows -> Result {
    let frame = pointer.pointee
    guard frame.nb_samples > 0, frame.ch_layout.nb_channels > 0, frame.width == 0 else { return try body(nil) }
    let format = AVSampleFormat(rawValue: frame.format)
    let layout: AudioSamples.Layout =
      switch format {
      case AV_SAMPLE_FMT_S16: .int16
      case AV_SAMPLE_FMT_S16P: .int16Planar
      case AV_SAMPLE_FMT_FLT: .float
      case AV_SAMPLE_FMT_FLTP: .floatPlanar
      default: .other(av_get_sample_fmt_name(format).map { String(cString: $0) } ?? "unknown")
      }
    let channels = Int(frame.ch_layout.nb_channels)
    let count = Int(frame.nb_samples)
    let bytes = Int(av_get_bytes_per_sample(format))
    let planar = av_sample_fmt_is_planar(format) != 0
    var planes: [UnsafeRawBufferPointer] = []
    for plane in 0..<(planar ? channels : 1) {
      guard let base = frame.extended_data[plane] else { continue }
      planes.append(UnsafeRawBufferPointer(start: base, count: count * bytes * (planar ? 1 : channels)))
    }
    return try body(
      AudioSamples(layout: layout, channels: channels, count: count, sampleRate: Int(frame.sample_rate), planes: planes)
    )
  }

  /// A picture of `width` × `height` in `format` with its buffers allocated (zeroed), for writers and
  /// test harnesses; `fill` may write each plane (plane index, its rows' base, stride, bytes per row, rows).
  package static func picture(
    width: Int, height: Int, format: PixelFormat,
    fill: (Int, UnsafeMutableRawPointer, Int, Int, Int) -> Void
  ) throws -> FrameBuffer {
    let frame = try FrameBuffer()
    let pixelFormat = av_get_pix_fmt(format.description)
    guard pixelFormat != AV_PIX_FMT_NONE, width > 0, height > 0 else {
      throw MediaError(.invalidArgument, "cannot make a \(width)x\(height) \(format) picture")
    }
    frame.pointer.pointee.width = Int32(width)
    frame.pointer.pointee.height = Int32(height)
    frame.pointer.pointee.format = pixelFormat.rawValue
    try FFmpeg.check(av_frame_get_buffer(frame.pointer, 0), "allocating a picture", kind: .resourceExhausted)
    frame.withPlanes { planes in
      for (index, plane) in planes.enumerated() {
        let base = UnsafeMutableRawPointer(mutating: plane.row(0).baseAddress!)
        memset(base, 0, plane.stride * plane.height)
        fill(index, base, plane.stride, plane.bytesPerLine, plane.height)
      }
    }
    return frame
  }

  /// A frame of `count` interleaved 16-bit samples per channel at `sampleRate`, `fill` writing them
  /// (`channels` × `count` values), for tests and code that makes its own sound.
  package static func sound(
    sampleRate: Int, channels: Int, count: Int, fill: (UnsafeMutableBufferPointer<Int16>) -> Void
  ) throws -> FrameBuffer {
    guard sampleRate > 0, (1...8).contains(channels), count > 0 else {
      throw MediaError(.invalidArgument, "cannot make \(count) samples of \(channels) channels at \(sampleRate) Hz")
    }
    let frame = try FrameBuffer()
    let f = frame.pointer
    f.pointee.format = AV_SAMPLE_FMT_S16.rawValue
    f.pointee.sample_rate = Int32(sampleRate)
    f.pointee.nb_samples = Int32(count)
    av_channel_layout_default(&f.pointee.ch_layout, Int32(channels))
    try FFmpeg.check(av_frame_get_buffer(f, 0), "allocating audio", kind: .resourceExhausted)
    f.pointee.data.0!.withMemoryRebound(to: Int16.self, capacity: count * channels) {
      fill(UnsafeMutableBufferPointer(start: $0, count: count * channels))
    }
    return frame
  }
}
