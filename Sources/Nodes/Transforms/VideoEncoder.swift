import Foundation
import PipelineGraph

/// Encodes decoded pictures into H.264 or H.265 (libx264 / libx265 through libavcodec): the encoder
/// other flows compose — a recorder of decoded media, the re-encoded edge of an exact cut, pictures a
/// node of one's own drew.
///
/// Every picture gives one packet at the picture's time, lasting its duration (no B-frames, no
/// look-ahead): Annex B with the parameter sets in-band before every keyframe, a keyframe first, then
/// at least every ``Configuration/keyframeInterval``. Pictures of another size or pixel format are
/// converted (libswscale) to the configured size (the first picture's when none is set) in yuv420p. A
/// `formatChange` announces the track's format before its first packet; a flush starts again with a
/// keyframe.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class VideoEncoder: Node {
  /// Consumes pictures.
  public typealias Input = DecodedFrame
  /// Emits encoded video.
  public typealias Output = EncodedPacket

  /// What to make.
  public struct Configuration: Sendable, Hashable {
    /// The track of the packets it emits.
    public var track: TrackID
    /// `.h264` (libx264) or `.h265` (libx265).
    public var codec: Codec
    /// The picture size (even numbers); nil takes the first picture's.
    public var width: Int?
    /// The picture height; nil takes the first picture's.
    public var height: Int?
    /// Constant rate factor, 0–51 (lower is better; 18 is about visually lossless, 23 is x264's default).
    public var quality: Int
    /// A keyframe at least this often (2 s by default); nil: only the first.
    public var keyframeInterval: MediaDuration?
    /// The x264/x265 preset (`ultrafast` … `veryslow`).
    public var preset: String

    /// Creates a configuration.
    public init(
      track: TrackID, codec: Codec = .h264, width: Int? = nil, height: Int? = nil, quality: Int = 20,
      keyframeInterval: MediaDuration? = .microseconds(2_000_000), preset: String = "veryfast"
    ) {
      self.track = track
      self.codec = codec
      self.width = width
      self.height = height
      self.quality = quality
      self.keyframeInterval = keyframeInterval
      self.preset = preset
    }
  }

  /// The node's name.
  public let name: String
  /// The configuration.
  public let configuration: Configuration
  private var encoder: PictureEncoder?
  private var format: TrackFormat?
  private var keyframeNext = true
  /// Pictures encoded so far.
  public private(set) var picturesEncoded = 0

  /// Creates an encoder.
  /// - Throws: ``MediaError`` `invalidArgument` for a codec that is not video or an odd size.
  public init(name: String = "VideoEncoder", configuration: Configuration) throws {
    guard configuration.codec.kind == .video else {
      throw MediaError(.invalidArgument, "\(configuration.codec) is not a video codec")
    }
    if let width = configuration.width, let height = configuration.height,
      width <= 0 || height <= 0 || width % 2 != 0 || height % 2 != 0
    {
      throw MediaError(.invalidArgument, "video size \(width)x\(height) must be positive and even")
    }
    self.name = name
    self.configuration = configuration
  }

  /// Encodes one picture (audio frames are ignored).
  public func process(_ input: DecodedFrame, context: NodeContext<EncodedPacket>) throws {
    guard input.frame.width > 0 else { return }
    let encoder = try self.encoder ?? makeEncoder(for: input.frame)
    self.encoder = encoder
    let (data, isKeyframe) = try encoder.encode(input.frame, at: input.time, keyframe: keyframeNext)
    keyframeNext = false
    var packetFormat =
      format
      ?? TrackFormat(codec: configuration.codec, width: encoder.settings.width, height: encoder.settings.height)
    if isKeyframe {
      let sets = VideoParameterProbe.parameterSets(in: data, codec: configuration.codec)
      if !sets.isEmpty { packetFormat.parameterSets = sets }
    }
    if packetFormat != format {
      format = packetFormat
      context.send(.formatChange(FormatChange(track: configuration.track, format: packetFormat, time: input.time)))
    }
    picturesEncoded += 1
    context.emit(
      EncodedPacket(
        track: configuration.track, format: packetFormat, time: input.time, duration: input.duration,
        isKeyframe: isKeyframe, data: data))
  }

  private func makeEncoder(for picture: FrameBuffer) throws -> PictureEncoder {
    // x264 and x265 take even sizes: an odd picture is converted to the even size just below.
    let width = configuration.width ?? (picture.width & ~1)
    let height = configuration.height ?? (picture.height & ~1)
    return try PictureEncoder(
      .init(
        codec: configuration.codec, width: width, height: height, quality: configuration.quality,
        keyframeInterval: configuration.keyframeInterval, preset: configuration.preset))
  }

  /// Starts again with a keyframe.
  public func flush(context: NodeContext<EncodedPacket>) {
    keyframeNext = true
  }
}
