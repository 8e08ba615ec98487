import Foundation
import PipelineGraph

/// Records what reaches it into an MP4 (stream copy): one video track and optionally one AAC track,
/// timed from the first video keyframe, gaps kept as they are (a recording, not an export).
///
/// The file is written fragmented under a temporary name beside `destination` and, at the end of the
/// stream, finalized into an ordinary MP4 with its index at the front under `destination`. Packets
/// before the first keyframe, of other tracks, or in another video format than the first are skipped
/// (``skippedPackets`` counts them).
public final class MP4Writer: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name = "MP4Writer"
  /// The final file.
  public let destination: URL
  /// The video track recorded.
  public let videoTrack: TrackID
  /// The audio track recorded, if any.
  public let audioTrack: TrackID?
  private let workingPath: String
  private var file: MP4File?
  private var videoFormat: TrackFormat?
  private var audioFormat: TrackFormat?
  private var origin: Int64?
  private var lastAudioEnd: Int64 = 0
  private var pendingVideo: EncodedPacket?
  /// Packets not recorded.
  public private(set) var skippedPackets = 0
  /// True once the final file exists.
  public private(set) var isFinalized = false

  /// Room reserved for the final index (1 MB: about 13 minutes); a longer recording is finalized by a
  /// remux instead of in place.
  public let reservedIndexBytes: Int

  /// Records `videoTrack` (and `audioTrack`) into `destination`.
  public init(destination: URL, videoTrack: TrackID, audioTrack: TrackID? = nil, reservedIndexBytes: Int = 1 << 20) {
    self.destination = destination
    self.reservedIndexBytes = reservedIndexBytes
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    workingPath = OutputFile.workingPath(for: destination)
  }

  /// Writes one packet.
  public func process(_ input: EncodedPacket, context: NodeContext<Never>) throws {
    if input.track == audioTrack {
      audioFormat = audioFormat ?? input.format
      guard let file, let origin, input.format.codec == .aac, input.format.sampleRate == audioFormat?.sampleRate,
        input.time.microseconds >= origin
      else { return skippedPackets += 1 }
      let time = max(input.time.microseconds - origin, lastAudioEnd)
      try file.writeAudio(input.data, time: time, duration: input.durationMicroseconds)
      lastAudioEnd = time + input.durationMicroseconds
      return
    }
    guard input.track == videoTrack else { return skippedPackets += 1 }
    if file == nil {
      guard input.isKeyframe else { return skippedPackets += 1 }
      try OutputFile.validate(destination)
      let audio = audioTrack == nil ? nil : audioFormat.flatMap { $0.codec == .aac ? $0 : nil }
      file = try MP4File(path: workingPath, video: input.format, audio: audio, reservedIndexBytes: reservedIndexBytes)
      videoFormat = input.format
      origin = input.time.microseconds
    }
    guard let videoFormat, input.format.codec == videoFormat.codec, input.format.width == videoFormat.width,
      input.format.height == videoFormat.height
    else { return skippedPackets += 1 }
    if let previous = pendingVideo {
      // A frame lasts until the next one in decode order (B-frames: decode and presentation orders differ).
      let step = input.decodeTime.microseconds - previous.decodeTime.microseconds
      try writeVideo(previous, duration: step > 0 ? step : previous.durationMicroseconds)
    }
    pendingVideo = input
  }

  private func writeVideo(_ packet: EncodedPacket, duration: Int64) throws {
    guard let file, let origin else { return }
    try file.writeVideo(
      packet.data, time: packet.time.microseconds - origin, decodeTime: packet.decodeTime.microseconds - origin,
      duration: duration, isKeyframe: packet.isKeyframe)
  }

  /// Finalizes the file at the end of the stream.
  public func finish(context: NodeContext<Never>) throws {
    if let last = pendingVideo {
      try writeVideo(last, duration: last.durationMicroseconds)
      pendingVideo = nil
    }
    guard let file else { throw TiError(.noRecordableMedia, "nothing was recorded") }
    defer { try? FileManager.default.removeItem(atPath: workingPath) }
    try file.finalize(installingAt: destination)
    self.file = nil
    isFinalized = true
  }

  /// An unfinished recording is closed and removed.
  public func stop(context: NodeContext<Never>) {
    guard !isFinalized else { return }
    file?.close()
    file = nil
    try? FileManager.default.removeItem(atPath: workingPath)
  }
}
