internal import CFFmpeg
import PipelineGraph

/// One `AVFrame`, owned by this object and freed in `deinit`.
public final class Frame: @unchecked Sendable {
  // The pointer is owned exclusively; after a frame is emitted it is only read, so sharing it between
  // branches (fan-out) is safe.
  /// The frame (read it; do not free it or keep it beyond this object).
  let pointer: UnsafeMutablePointer<AVFrame>

  /// Allocates an empty frame.
  public init() throws {
    guard let pointer = av_frame_alloc() else { throw TiError(.resourceExhausted, "av_frame_alloc failed") }
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
  /// Samples per channel (audio).
  public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
  /// Audio channels (0 for video).
  public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
  /// Samples per second (audio; 0 for video).
  public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
  /// The frame's timestamp in its time base.
  var pts: Int64 { pointer.pointee.pts }
}
