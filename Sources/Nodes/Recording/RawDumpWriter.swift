import Dispatch
import Foundation
import PipelineGraph

/// Captures the media a replay reads, per channel, as it arrived (the seed's raw audio/video diagnostic
/// dump): one elementary-stream file per track and codec, a timing index beside each, and a manifest
/// with the integrity fields, in a directory of its own.
///
/// Files: `video-<ch>.h264` / `.h265` (Annex B), `audio-<ch>.aac` (ADTS), `.alaw` / `.ulaw` (G.711,
/// one byte per sample); a codec change starts `<kind>-<ch>-2.<ext>`. Each has `<file>.index.csv`
/// (`time_ms,offset,size,keyframe`). `manifest.json` is written last, through a rename: a directory
/// without it is an unfinished dump. Its fields per file are the byte and packet counts, the SHA-256 and
/// the first and last media time; for the dump, why it stopped and the limits.
///
/// It stops by itself once the next packet would take it over ``maximumBytes`` (that packet is not
/// written), or when a file cannot be written. ``take(_:)`` may be called from any thread; disk writes
/// run on the writer's own queue, so the replay is never held up by them.
///
/// States: capturing → stopped (``finish(_:_:)``, the size limit or a write failure; later packets are
/// ignored) → finished (the summary exists). Every method is thread-safe; the closures given to
/// ``finish(_:_:)`` and ``whenFinished(_:)`` run on the writer's queue.
public final class RawDumpWriter: @unchecked Sendable {
  /// Why a dump ended.
  public enum StopReason: String, Sendable {
    /// Its owner stopped it.
    case stopped
    /// It ran for its longest duration.
    case durationLimit
    /// The next packet would have taken it over its size limit.
    case sizeLimit
    /// The replay it captured was released.
    case replayDisposed
    /// A file could not be written (the files so far are kept).
    case writeFailed
  }

  /// One captured file and its integrity fields.
  public struct File: Sendable, Hashable {
    /// Where it is.
    public var url: URL
    /// The track it holds.
    public var track: TrackID
    /// Its codec (the file's format).
    public var codec: Codec
    /// Packets written.
    public var packets: Int
    /// Bytes written.
    public var bytes: Int64
    /// SHA-256 of its bytes, lowercase hex.
    public var sha256: String
    /// Media time of its first and last packet (ms).
    public var firstTimeMs: Int64
    /// Media time of its last packet (ms).
    public var lastTimeMs: Int64
  }

  /// What a finished dump holds.
  public struct Summary: Sendable {
    /// The dump's directory.
    public var directory: URL
    /// Its files, in the order they were started.
    public var files: [File]
    /// Why it stopped.
    public var reason: StopReason
    /// The write failure, when `reason` is `writeFailed` or the manifest could not be written.
    public var failure: MediaError?
  }

  /// The directory the files go to (created by ``init(directory:tracks:maximumBytes:maximumDurationMs:)``).
  public let directory: URL
  /// The tracks captured.
  public let tracks: Set<TrackID>
  /// The most bytes of media the files hold together.
  public let maximumBytes: Int64
  /// Set at creation: the longest duration its owner lets it run (written to the manifest).
  public let maximumDurationMs: Int64

  private let queue = DispatchQueue(label: "tipipe.rawdump")
  private let state = Locked(State())
  private let startedAt = Date()
  // Confined to `queue`.
  private var open: [TrackID: OpenFile] = [:]
  private var finished: [OpenFile] = []
  private var writeFailure: MediaError?
  private var concluded = false

  struct State {
    var bytes: Int64 = 0
    var stopping: StopReason?
    var summary: Summary?
    var waiting: [@Sendable (Summary) -> Void] = []
  }

  /// Creates `directory` (which must not exist) for a dump of `tracks`.
  public init(directory: URL, tracks: Set<TrackID>, maximumBytes: Int64 = 1 << 30, maximumDurationMs: Int64) throws {
    self.directory = directory
    self.tracks = tracks
    self.maximumBytes = maximumBytes
    self.maximumDurationMs = maximumDurationMs
    do {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
    } catch {
      throw MediaError(
        .writeFailed, "cannot create the dump directory \(directory.path): \(error.localizedDescription)")
    }
  }

  /// True once it has stopped (by itself or by ``finish(_:_:)``).
  public var isFinished: Bool { state.withLock { $0.stopping != nil } }

  /// Captures `packet` when its track is one of ``tracks``.
  public func take(_ packet: EncodedPacket) {
    guard tracks.contains(packet.track) else { return }
    let accepted = state.withLock { state -> Bool? in
      guard state.stopping == nil else { return false }
      let total = state.bytes + Int64(packet.data.count)
      guard total <= maximumBytes else { return nil }
      state.bytes = total
      return true
    }
    switch accepted {
    case true?: queue.async { [self] in write(packet) }
    case nil: finish(.sizeLimit) { _ in }
    case false?: break
    }
  }

  /// Stops capturing (the first reason wins), closes the files and writes the manifest; `completion`
  /// gets the summary on the writer's queue — every caller the same one.
  public func finish(_ reason: StopReason, _ completion: @escaping @Sendable (Summary) -> Void) {
    let (summary, first) = state.withLock { state -> (Summary?, Bool) in
      if let summary = state.summary { return (summary, false) }
      state.waiting.append(completion)
      defer { if state.stopping == nil { state.stopping = reason } }
      return (nil, state.stopping == nil)
    }
    if let summary {
      queue.async { completion(summary) }
      return
    }
    guard first else { return }
    queue.async { [self] in
      let summary = conclude(reason)
      let waiting = state.withLock { state -> [@Sendable (Summary) -> Void] in
        state.summary = summary
        defer { state.waiting = [] }
        return state.waiting
      }
      for completion in waiting { completion(summary) }
    }
  }

  /// Calls `body` with the summary once the dump has finished, however it ends (at once, on the
  /// writer's queue, when it has), without stopping it.
  public func whenFinished(_ body: @escaping @Sendable (Summary) -> Void) {
    let summary = state.withLock { state -> Summary? in
      if state.summary == nil { state.waiting.append(body) }
      return state.summary
    }
    if let summary { queue.async { body(summary) } }
  }

  // MARK: On the queue

  private final class OpenFile {
    let url: URL
    let track: TrackID
    let codec: Codec
    let handle: FileHandle
    let index: FileHandle
    let digest = SHA256Stream()
    var packets = 0
    var bytes: Int64 = 0
    var first: Int64 = 0
    var last: Int64 = 0
    var sha256 = ""

    init(url: URL, track: TrackID, codec: Codec) throws {
      self.url = url
      self.track = track
      self.codec = codec
      let indexURL = URL(fileURLWithPath: url.path + ".index.csv")
      guard FileManager.default.createFile(atPath: url.path, contents: nil),
        FileManager.default.createFile(atPath: indexURL.path, contents: Data("time_ms,offset,size,keyframe\n".utf8)),
        let handle = FileHandle(forWritingAtPath: url.path), let index = FileHandle(forWritingAtPath: indexURL.path)
      else { throw MediaError(.writeFailed, "cannot create \(url.path)") }
      index.seekToEndOfFile()
      self.handle = handle
      self.index = index
    }

    func append(_ packet: EncodedPacket) throws {
      let time = packet.time.milliseconds
      if packets == 0 { first = time }
      try handle.write(contentsOf: packet.data)
      try index.write(contentsOf: Data("\(time),\(bytes),\(packet.data.count),\(packet.isKeyframe ? 1 : 0)\n".utf8))
      packet.data.withUnsafeBytes { digest.update($0) }
      packets += 1
      bytes += Int64(packet.data.count)
      last = time
    }

    func close() {
      try? handle.close()
      try? index.close()
      sha256 = digest.finalHex()
    }

    var file: File {
      File(
        url: url, track: track, codec: codec, packets: packets, bytes: bytes, sha256: sha256, firstTimeMs: first,
        lastTimeMs: last)
    }
  }

  private func write(_ packet: EncodedPacket) {
    guard writeFailure == nil, !concluded else { return }
    do {
      let file: OpenFile
      if let current = open[packet.track], current.codec == packet.format.codec {
        file = current
      } else {
        if let current = open[packet.track] {
          current.close()
          finished.append(current)
        }
        file = try OpenFile(
          url: nextURL(for: packet.track, codec: packet.format.codec), track: packet.track, codec: packet.format.codec)
        open[packet.track] = file
      }
      try file.append(packet)
    } catch {
      writeFailure = MediaError(.writeFailed, "the dump cannot write \(packet.track): \(error)")
      finish(.writeFailed) { _ in }
    }
  }

  private func nextURL(for track: TrackID, codec: Codec) -> URL {
    let base = "\(track.kind == .video ? "video" : "audio")-\(track.channel)"
    let earlier = finished.count { $0.track == track }
    return directory.appendingPathComponent(
      earlier == 0 ? "\(base).\(codec.fileExtension)" : "\(base)-\(earlier + 1).\(codec.fileExtension)")
  }

  private func conclude(_ reason: StopReason) -> Summary {
    concluded = true
    for file in open.values.sorted(by: { $0.url.path < $1.url.path }) {
      file.close()
      finished.append(file)
    }
    open = [:]
    let files = finished.map(\.file)
    var summary = Summary(directory: directory, files: files, reason: reason, failure: writeFailure)
    do {
      try OutputFile.write(manifest(summary), to: directory.appendingPathComponent("manifest.json"))
    } catch {
      summary.failure = summary.failure ?? MediaError(error)
    }
    return summary
  }

  private func manifest(_ summary: Summary) throws -> Data {
    let files: [[String: Any]] = summary.files.map { file in
      [
        "name": file.url.lastPathComponent, "index": file.url.lastPathComponent + ".index.csv",
        "kind": file.track.kind == .video ? "video" : "audio", "channel_id": Int(file.track.channel),
        "codec": file.codec.description, "packets": file.packets, "bytes": file.bytes, "sha256": file.sha256,
        "first_time_ms": file.firstTimeMs, "last_time_ms": file.lastTimeMs,
      ]
    }
    let object: [String: Any] = [
      "format": "tipipe-rawdump/1",
      "started_unix_ms": Int64(startedAt.timeIntervalSince1970 * 1000),
      "stopped_unix_ms": Int64(Date().timeIntervalSince1970 * 1000),
      "stop_reason": summary.reason.rawValue,
      "total_bytes": summary.files.reduce(Int64(0)) { $0 + $1.bytes },
      "max_bytes": maximumBytes, "max_duration_ms": maximumDurationMs,
      "files": files,
    ]
    return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
  }
}
