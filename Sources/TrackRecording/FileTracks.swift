import Foundation
public import Nodes
public import PipelineGraph

/// A media file's decoded picture and sound as `MediaTrack`s: `MediaFileSource → FrameDecoder →
/// TrackFeed` for its first video and its first audio stream (a `VideoRotator` before the video's feed
/// when the file says its picture is shown turned), on a thread of its own. The file is read
/// as fast as the tracks' subscribers take it (a recorder slower than the decoder holds it back); each
/// track ends with the file.
///
/// States: built → started (``start()``) → ended (the file's end, ``stop()``, or a failure:
/// ``failure`` says which; the tracks end either way). Thread-safe.
public final class FileTracks: Sendable {
  /// The file's video as a track (nil when not asked for or absent).
  public let video: MediaTrack?
  /// The file's audio as a track (nil when not asked for or absent).
  public let audio: MediaTrack?
  /// Where the file's media starts: its first timestamp (the tracks' frames carry the file's own times),
  /// or the `startTime` it was placed at.
  public let mediaStart: MediaTime
  /// Where the first frame shown of the tracks taken starts (in the tracks' times: from `startTime` when
  /// the file was placed there): the file's start for both of an ordinary file; a track taken alone, its
  /// own start (a sound recorded alone starts with its first frame, not with the file's picture).
  public let tracksStart: MediaTime
  private let pipeline: Pipeline
  private let stopReading: MediaFileSource.Stop
  private let executor: ThreadExecutor
  private let failed = Locked<MediaError?>(nil)
  private let skipped = Locked(0)
  private let damagedInFile: MediaFileSource.DamagedPackets

  /// The tracks of the file at `path` (`video`/`audio`: whether to take each kind; one the file lacks is
  /// nil), in the file's own times, or with its start placed at `startTime` (files composed together
  /// each from their start: every one at 0).
  /// - Throws: `MediaError` for a file that cannot be read, or that has none of the kinds asked for.
  public init(path: String, video: Bool = true, audio: Bool = true, startTime: MediaTime? = nil) throws {
    let info = try MediaFileSource.probe(path: path)
    let source = startTime.map { MediaFileSource(path: path, startTime: $0) } ?? MediaFileSource(path: path)
    stopReading = source.stop
    damagedInFile = source.damaged
    let videoTrack = video && info.video != nil ? MediaTrack(id: source.videoTrack, isLive: false) : nil
    let audioTrack = audio && info.audio != nil ? MediaTrack(id: source.audioTrack, isLive: false) : nil
    let unread = [
      (TrackKind.video, video && info.video == nil, "picture"), (.audio, audio && info.audio == nil, "sound"),
    ]
    .compactMap { kind, asked, word in
      asked ? info.tracks.first { $0.kind == kind }.map { "its \(word) (\($0.codecName))" } : nil
    }
    self.unread = unread
    guard videoTrack != nil || audioTrack != nil else {
      guard unread.isEmpty else {
        throw MediaError(.unsupportedFormat, "\(path): \(unread.joined(separator: " and ")), not read")
      }
      throw MediaError(
        .noMedia, "\(path) has no \(video && audio ? "video or audio" : video ? "video" : "audio")")
    }
    self.video = videoTrack
    self.audio = audioTrack
    mediaStart = startTime ?? info.start
    let taken = [videoTrack.flatMap { _ in info.video }, audioTrack.flatMap { _ in info.audio }].compactMap { $0 }
    let firstShown = taken.filter { $0.packets > 0 }.map(\.range.start).min() ?? info.start
    if let startTime {
      tracksStart = (try? firstShown - info.start).flatMap { try? startTime + $0 } ?? startTime
    } else {
      tracksStart = firstShown
    }
    let executor = ThreadExecutor(name: "tirtc.file-tracks")
    self.executor = executor
    let pipeline = Pipeline(executor: executor)
    self.pipeline = pipeline
    var decoders: Set<ObjectIdentifier> = []
    if let videoTrack {
      let decoder = try FrameDecoder(name: "VideoDecoder", track: source.videoTrack)
      decoders.insert(ObjectIdentifier(decoder))
      let feed = TrackFeed(name: "VideoFeed", track: videoTrack)
      pipeline.connect(source, to: decoder, limits: EdgeLimits(items: 64, bytes: 8 << 20))
      // A phone's recording turned as its container says: the track carries the picture upright.
      if let turn = info.video?.turn {
        let rotator = VideoRotator(turn: turn)
        pipeline.connect(decoder, to: rotator, limits: EdgeLimits(items: 4))
        pipeline.connect(rotator, to: feed, limits: EdgeLimits(items: 4))
      } else {
        pipeline.connect(decoder, to: feed, limits: EdgeLimits(items: 4))
      }
    }
    if let audioTrack {
      let decoder = try FrameDecoder(name: "AudioDecoder", track: source.audioTrack)
      decoders.insert(ObjectIdentifier(decoder))
      pipeline.connect(source, to: decoder, limits: EdgeLimits(items: 256, bytes: 8 << 20))
      pipeline.connect(decoder, to: TrackFeed(name: "AudioFeed", track: audioTrack), limits: EdgeLimits(items: 16))
    }
    let failed = self.failed
    let skipped = self.skipped
    pipeline.errorHandler = { [decoders] node in
      // A damaged packet (a few bad bytes, a truncated file's last frame) costs its own frames, as ffmpeg
      // skips it: the decoder goes on with the next one. Reading the file failing ends the tracks.
      if FrameDecoder.isDamagedPacket(node, from: decoders) {
        skipped.withLock { $0 += 1 }
        return .resume
      }
      failed.withLock { $0 = $0 ?? MediaError(node) }
      videoTrack?.end()
      audioTrack?.end()
      return .stopPipeline
    }
  }

  deinit {
    pipeline.stop()
    video?.end()
    audio?.end()
    let executor = self.executor
    DispatchQueue.global().async { executor.shutdown() }
  }

  /// Starts reading: the tracks carry the file's frames from its start.
  public func start() throws { try pipeline.start() }

  /// Ends the reading where it is, from any thread: what was read is decoded and carried, then the tracks
  /// end (a recording stopped by a signal keeps each track as far as the file's order took it).
  public func finishReading() { stopReading() }

  /// Stops reading; the tracks end.
  public func stop() {
    pipeline.stop()
    video?.end()
    audio?.end()
  }

  /// Why reading stopped early, if it did.
  public var failure: MediaError? { failed.withLock { $0 } }

  /// What the file holds of a kind asked for in a codec that is not read (H.264/H.265 pictures and AAC
  /// or G.711 sound are): "its sound (mp3)", "its picture (vp9)". The tracks carry none of it.
  public let unread: [String]

  /// Damaged packets — the file's reading could not take them apart, or a decoder could not decode them:
  /// skipped, their frames missing from the tracks.
  public var damagedPackets: Int { skipped.withLock { $0 } + damagedInFile.count }

  /// True once every track has ended.
  public var isEnded: Bool { (video?.isEnded ?? true) && (audio?.isEnded ?? true) }
}
