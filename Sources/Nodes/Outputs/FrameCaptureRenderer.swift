import PipelineGraph

/// A renderer that keeps what it was given: the frames' times, their count and the last frame (for
/// tests and snapshots).
///
/// No lifecycle; thread-safe (a lock guards what it keeps): render and read from any thread.
public final class FrameCaptureRenderer: VideoRenderer {
  private let state = Locked<(times: [MediaTimeMicroseconds], last: DecodedFrame?)>(([], nil))

  /// Media times in microseconds.
  public typealias MediaTimeMicroseconds = Int64

  /// Creates a capturing renderer.
  public init() {}

  /// Keeps the frame and its time.
  public func render(_ frame: DecodedFrame) {
    state.withLock {
      $0.times.append(frame.time.microseconds)
      $0.last = frame
    }
  }

  /// The media times of every frame rendered, in order.
  public var renderedTimes: [MediaTimeMicroseconds] { state.withLock { $0.times } }

  /// The last frame rendered.
  public var lastFrame: DecodedFrame? { state.withLock { $0.last } }
}
