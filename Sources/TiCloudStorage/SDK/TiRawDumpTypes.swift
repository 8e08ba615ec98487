import Foundation
import Nodes

/// What a raw dump captures: audio and video channel IDs (0...255); at least one list is non-empty
/// (rules.md X1).
public struct TiCloudStorageRawDumpOptions: Sendable, Hashable {
  /// Audio channels to capture.
  public var audioChannelIds: [Int]
  /// Video channels to capture.
  public var videoChannelIds: [Int]

  /// Options capturing `audioChannelIds` and `videoChannelIds`.
  public init(audioChannelIds: [Int] = [], videoChannelIds: [Int] = []) {
    self.audioChannelIds = audioChannelIds
    self.videoChannelIds = videoChannelIds
  }
}

/// The answer of `startRawDump`: the dump exactly when the code is ok (X3).
public final class TiRawDumpStartResult: Sendable {
  /// ok, or why no dump started: notConfigured for two empty lists, invalidArgument for an ID outside
  /// 0...255 (X2), inUse while another dump runs (X6), notInitialized after `dispose`, fileWriteFailed
  /// when its folder cannot be created.
  public let code: Int32
  /// The running dump, when `code` is ok.
  public let dump: TiRawDump?

  init(code: Int32, dump: TiRawDump? = nil) {
    self.code = code
    self.dump = dump
  }
}

/// One file a raw dump wrote, with its integrity fields (also in the dump's `manifest.json`).
public struct TiRawDumpFile: Sendable, Hashable {
  /// The file: an elementary stream as it arrived (`video-0.h264`, `audio-0.aac`, `audio-0.alaw` …);
  /// its timing index is beside it (`<path>.index.csv`: `time_ms,offset,size,keyframe`).
  public let path: String
  /// True for a video channel.
  public let isVideo: Bool
  /// The channel ID.
  public let channelId: Int
  /// `h264`, `h265`, `aac`, `g711a` or `g711u`.
  public let codec: String
  /// Packets in the file.
  public let packetCount: Int
  /// Bytes in the file.
  public let byteCount: Int64
  /// SHA-256 of the file, lowercase hex.
  public let sha256: String
  /// Media time (UTC ms) of the first packet.
  public let firstTimeMs: Int64
  /// Media time (UTC ms) of the last packet.
  public let lastTimeMs: Int64

  init(_ file: RawDumpWriter.File) {
    path = file.url.path
    isVideo = file.track.kind == .video
    channelId = Int(file.track.channel)
    codec = file.codec.description
    packetCount = file.packets
    byteCount = file.bytes
    sha256 = file.sha256
    firstTimeMs = file.firstTimeMs
    lastTimeMs = file.lastTimeMs
  }
}

/// The final answer of a raw dump's `stop` (X4): the same for every call.
public final class TiRawDumpStopResult: Sendable {
  /// ok when every packet captured was written; fileWriteFailed when a file or the manifest could not be
  /// written (the files listed were still completed).
  public let code: Int32
  /// The completed files.
  public let files: [TiRawDumpFile]
  /// The dump's folder in the SDK cache (`dumps/rawdump-…`), with its `manifest.json`.
  public let directoryPath: String
  /// Why it ended: `stopped`, `durationLimit` (5 minutes), `sizeLimit` (1 GiB), `replayDisposed`,
  /// `writeFailed`.
  public let stopReason: String

  init(_ summary: RawDumpWriter.Summary) {
    code = summary.failure == nil ? TiCloudStorageErrorCode.ok : TiCloudStorageErrorCode.fileWriteFailed
    files = summary.files.map(TiRawDumpFile.init)
    directoryPath = summary.directory.path
    stopReason = summary.reason.rawValue
  }
}
