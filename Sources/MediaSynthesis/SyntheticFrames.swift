import Foundation
import Nodes
import PipelineGraph

/// Decoded frames and encoded packets made to order, for tests of nodes that take them (no codec
/// involved, no C import for the test).
public enum SyntheticFrames {
  /// A `width` × `height` picture in `format`; byte `x` of row `y` of plane `plane` is
  /// `value(plane, x, y)` (for `yuv420p`: plane 0 is luma, 1 and 2 chroma at half size).
  /// - Throws: `MediaError` `invalidArgument` for a size below 1 or a format libavutil cannot allocate.
  public static func picture(
    track: TrackID = TrackID(.video, channel: 0), time: MediaTime, duration: MediaDuration = .microseconds(40_000),
    width: Int, height: Int, format: PixelFormat = .yuv420p, value: (Int, Int, Int) -> UInt8
  ) throws -> DecodedFrame {
    let buffer = try FrameBuffer.picture(width: width, height: height, format: format) {
      plane, base, stride, bytesPerLine, rows in
      for y in 0..<rows {
        let row = base + y * stride
        for x in 0..<bytesPerLine { row.storeBytes(of: value(plane, x, y), toByteOffset: x, as: UInt8.self) }
      }
    }
    return DecodedFrame(track: track, time: time, duration: duration, frame: buffer)
  }

  /// An encoded video packet of `format` whose payload is `payload` (not decodable: for nodes that route,
  /// time or count packets).
  public static func videoPacket(
    track: TrackID = TrackID(.video, channel: 0), time: MediaTime, duration: MediaDuration = .microseconds(40_000),
    isKeyframe: Bool, format: TrackFormat = TrackFormat(codec: .h264, width: 320, height: 240),
    payload: [UInt8] = [0, 0, 0, 1, 0x65]
  ) -> EncodedPacket {
    EncodedPacket(
      track: track, format: format, time: time, duration: duration, isKeyframe: isKeyframe, data: .init(payload))
  }
}
