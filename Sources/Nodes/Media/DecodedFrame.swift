import PipelineGraph

/// A decoded picture or block of audio samples, owning its `AVFrame` (one owner, freed in `deinit`;
/// fan-out shares the object, nothing is copied).
///
/// Immutable, no states: any thread may read it.
public final class DecodedFrame: WeighedItem, Sendable {
  /// The track it was decoded from.
  public let track: TrackID
  /// Presentation time (video) or first sample (audio).
  public let time: MediaTime
  /// How long it lasts.
  public let duration: MediaDuration
  /// The frame's pixels or samples.
  public let frame: FrameBuffer

  /// Wraps a decoded frame.
  public init(track: TrackID, time: MediaTime, duration: MediaDuration, frame: FrameBuffer) {
    self.track = track
    self.time = time
    self.duration = duration
    self.frame = frame
  }

  /// The picture's pixel format; nil for audio.
  public var pixelFormat: PixelFormat? { frame.pixelFormat }

  /// Runs `body` with the picture's planes (none for audio), valid only inside `body`.
  public func withPlanes<Result>(_ body: ([PixelPlane]) throws -> Result) rethrows -> Result {
    try frame.withPlanes(body)
  }

  /// Runs `body` with the audio samples (nil for a picture), valid only inside `body`.
  public func withSamples<Result>(_ body: (AudioSamples?) throws -> Result) rethrows -> Result {
    try frame.withSamples(body)
  }

  /// Approximate bytes held (YUV 4:2:0 picture or 16-bit samples).
  public var byteCount: Int {
    track.kind == .video ? frame.width * frame.height * 3 / 2 : frame.sampleCount * 4
  }
}
