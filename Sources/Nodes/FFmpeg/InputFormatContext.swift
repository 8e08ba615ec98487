internal import CFFmpeg
import PipelineGraph

/// One demuxing `AVFormatContext`, owned by this object and closed in `deinit`.
final class InputFormatContext {
  let pointer: UnsafeMutablePointer<AVFormatContext>

  /// Opens and probes `path`.
  init(path: String) throws {
    var context: UnsafeMutablePointer<AVFormatContext>?
    let opened = avformat_open_input(&context, path, nil, nil)
    guard opened >= 0, let context else {
      let reason: GapReason = opened == cff_averror(ENOENT) ? .notFound : .mediaUnreadable
      throw MediaError.gap(reason, "cannot open \(path): \(FFmpeg.message(for: opened))", cause: FFmpeg.failure(opened))
    }
    pointer = context
    let found = avformat_find_stream_info(context, nil)
    if found < 0 {
      // Every stored property is set: throwing releases the object, and `deinit` closes the context.
      throw MediaError.gap(
        .mediaUnreadable, "cannot read the streams of \(path): \(FFmpeg.message(for: found))",
        cause: FFmpeg.failure(found))
    }
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVFormatContext>? = pointer
    avformat_close_input(&pointer)
  }

  var streams: [UnsafeMutablePointer<AVStream>] {
    (0..<Int(pointer.pointee.nb_streams)).compactMap { pointer.pointee.streams[$0] }
  }
}
