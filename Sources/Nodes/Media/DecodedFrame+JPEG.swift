import Foundation

extension DecodedFrame {
  /// The picture as a JPEG of its own size (libavcodec's MJPEG encoder, full-range 4:2:0 through
  /// libswscale): what a snapshot saves.
  ///
  /// - Throws: `invalidArgument` for an audio frame, `unsupportedFormat` when libav cannot encode it.
  public func jpegData() throws -> Data {
    guard track.kind == .video else { throw MediaError(.invalidArgument, "a JPEG needs a picture, not audio") }
    return try JPEGEncoder().encode(frame)
  }
}
