import Foundation
import PipelineGraph

/// One encoded access unit (video) or audio frame of a track, as the demuxer emits it.
///
/// Immutable and shared by reference: fan-out hands the same packet to every branch. No states: any
/// thread may read it.
public final class EncodedPacket: WeighedItem, Sendable, CustomStringConvertible {
  /// The track the packet belongs to.
  public let track: TrackID
  /// The track's format at this packet.
  public let format: TrackFormat
  /// Presentation time (video) or time of the first sample (audio).
  public let time: MediaTime
  /// Decoding time: equal to `time` except for streams with reordered frames (standard files with
  /// B-frames; TSEG has none).
  public let decodeTime: MediaTime
  /// Duration until the next packet of the track (estimated for the last one).
  public let duration: MediaDuration
  /// A random-access point (an IDR/IRAP access unit carrying its parameter sets).
  public let isKeyframe: Bool
  /// True for a packet decoded only for the pictures or sound after it, never shown: what a file's edit
  /// list hides (libavformat's `AV_PKT_FLAG_DISCARD`: a file cut without re-encoding keeps the start of
  /// the group of pictures the cut is in). A decoder drops its frames, as ffmpeg does.
  public let isHidden: Bool
  /// Audio: the samples at the packet's start that are not shown — a file's edit list starts inside it
  /// (a file cut without re-encoding, or an encoder's priming longer than a frame). A decoder drops them,
  /// as ffmpeg does; 0 for every other packet.
  public let hiddenSamples: Int
  /// The payload: Annex B for video, one ADTS frame for AAC, G.711 bytes.
  public let data: Data

  /// Creates a packet.
  public init(
    track: TrackID, format: TrackFormat, time: MediaTime, decodeTime: MediaTime? = nil, duration: MediaDuration,
    isKeyframe: Bool, data: Data, isHidden: Bool = false, hiddenSamples: Int = 0
  ) {
    self.track = track
    self.format = format
    self.time = time
    self.decodeTime = decodeTime ?? time
    self.duration = duration
    self.isKeyframe = isKeyframe
    self.isHidden = isHidden
    self.hiddenSamples = hiddenSamples
    self.data = data
  }

  /// Payload bytes, for edge bounds.
  public var byteCount: Int { data.count }

  /// `video:0@1000ms key 1234 B`.
  public var description: String { "\(track)@\(time)\(isKeyframe ? " key" : "") \(data.count) B" }
}
