import Foundation
public import Nodes
import Observation
public import PipelineGraph

/// Records one video track and one audio track of decoded media into a fragmented MP4 (H.264 + AAC) in
/// ``recordingsDirectory`` — seed 003's TrackRecorder, on Linux.
///
/// A track is any `MediaTrack`: a file's or a replay's decoded branch (`TrackFeed`), a live source,
/// frames of one's own. Each recording is a graph of its own (fit, constant frame
/// rate and H.264 for the picture, AAC for the sound, the fragmented writer), so several recorders run at
/// once, and one track feeds any number of them without copying frames.
///
/// Call it on the main actor; its observable properties (``state``, ``diskSpaceWarning``, ``lastError``,
/// ``lastFinishedFile``) change there only (Swift's `Observation`; ``changes`` gives them as an
/// `AsyncStream` to code without a UI). States: idle → recording ⇄ paused → finalizing → idle
/// (rules RC1–RC42 in `docs/track-recorder-rules.md`).
@MainActor
@Observable
public final class TrackRecorder {
  /// The video track recorded, if any.
  public let videoTrack: MediaTrack?
  /// The audio track recorded, if any.
  public let audioTrack: MediaTrack?
  /// Pictures per second in the file.
  public let videoFps: Int
  /// The picture size in the file.
  public let videoSize: VideoSize

  /// What the recorder is doing.
  public private(set) var state = RecorderState.idle {
    didSet { if state != oldValue { announce() } }
  }
  /// The latest disk space warning of the current recording, or nil.
  public private(set) var diskSpaceWarning: DiskSpaceWarning?
  /// An error that stopped the current recording, or nil.
  public private(set) var lastError: (any Error)?
  /// The most recent file this recorder finished (set by all three ways a recording stops; kept when a
  /// file could not be written).
  public private(set) var lastFinishedFile: RecordingFileInfo?

  /// True while the state is ``RecorderState/recording``.
  public var isRecording: Bool { state == .recording }

  @ObservationIgnored private var session: RecordingSession? {
    didSet { sessionForCuts.withLock { $0 = session } }
  }
  /// The recording under way, for ``leaveOut(_:)`` from any thread.
  @ObservationIgnored nonisolated private let sessionForCuts = Locked<RecordingSession?>(nil)
  /// The file being recorded, and its identity (device, inode) when it was created.
  @ObservationIgnored private var current: (url: URL, id: String, file: FileIdentity)?
  @ObservationIgnored private var completion: (@MainActor (RecordingFileInfo?) -> Void)?
  @ObservationIgnored private var diskWatch: Task<Void, Never>?
  @ObservationIgnored private var continuations: [UUID: AsyncStream<RecorderState>.Continuation] = [:]

  /// A recorder of `videoTrack` and `audioTrack` (at least one: starting without any fails with
  /// `RecordingEngine` −3), pictures at `videoFps` (1…240) fitted inside `videoSize`.
  public init(
    videoTrack: MediaTrack? = nil, audioTrack: MediaTrack? = nil, videoFps: Int = 20, videoSize: VideoSize = .hd720
  ) {
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.videoFps = videoFps
    self.videoSize = videoSize
  }

  isolated deinit {
    // Released without stop: the file keeps everything up to its last fragment (RC41).
    session?.abort()
    diskWatch?.cancel()
    for continuation in continuations.values { continuation.finish() }
  }

  // MARK: Files

  /// Where recordings are saved: `Recordings` under the data root (`$XDG_DATA_HOME/tirtc`, else
  /// `~/.local/share/tirtc`), or under ``dataRoot`` when it is set.
  public nonisolated static var recordingsDirectory: URL {
    dataRoot.appendingPathComponent("Recordings", isDirectory: true)
  }

  nonisolated private static let dataRootOverride = Locked<URL?>(nil)

  /// The data root (settable: a command line's `--data-root`, a test's temporary directory).
  public nonisolated static var dataRoot: URL {
    get {
      if let root = dataRootOverride.withLock({ $0 }) { return root }
      let environment = ProcessInfo.processInfo.environment
      if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
        return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("tirtc", isDirectory: true)
      }
      let home =
        environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
        ?? FileManager.default.homeDirectoryForCurrentUser
      return home.appendingPathComponent(".local/share/tirtc", isDirectory: true)
    }
    set { dataRootOverride.withLock { $0 = newValue } }
  }

  /// Every recording, newest first.
  public nonisolated static func getRecordingList() -> [RecordingFileInfo] {
    let directory = recordingsDirectory
    guard
      let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
    else { return [] }
    return names.filter { $0.hasSuffix(".mp4") }.compactMap { name in
      info(at: directory.appendingPathComponent(name), duration: nil)
    }.sorted { $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.id < $1.id }
  }

  /// Deletes the recording with `fileId` (its name without `.mp4`).
  /// - Throws: `CocoaError.fileNoSuchFile` when there is none.
  public nonisolated static func deleteRecording(fileId: String) throws {
    guard RecordingName.isValid(fileId) else {
      throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: fileId])
    }
    try deleteRecording(at: recordingsDirectory.appendingPathComponent(fileId + ".mp4"))
  }

  /// Deletes the recording at `url`: only a regular file directly in ``recordingsDirectory`` whose name
  /// ends in `.mp4`.
  /// - Throws: `CocoaError.fileNoSuchFile` for anything else.
  public nonisolated static func deleteRecording(at url: URL) throws {
    let file = url.standardizedFileURL
    var status = stat()
    guard file.pathExtension == "mp4",
      file.deletingLastPathComponent().path == recordingsDirectory.standardizedFileURL.path,
      lstat(file.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG
    else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path]) }
    guard unlink(file.path) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
  }

  /// Deletes every recording.
  public nonisolated static func deleteAllRecordings() throws {
    for info in getRecordingList() { try deleteRecording(at: info.url) }
  }

  /// What is known of the file at `url` (nil unless it is a regular file).
  nonisolated static func info(at url: URL, duration: TimeInterval?) -> RecordingFileInfo? {
    var status = stat()
    guard lstat(url.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
    let seconds =
      duration ?? (try? MediaFileSource.probe(path: url.path)).map { Double($0.duration.microseconds) / 1e6 }
    return RecordingFileInfo(
      id: url.deletingPathExtension().lastPathComponent, url: url, duration: seconds ?? 0, size: Int64(status.st_size),
      createdAt: Date(
        timeIntervalSince1970: Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9))
  }

  // MARK: Disk space

  nonisolated private static let thresholds = Locked((warning: Int64(100 << 20), critical: Int64(50 << 20)))
  nonisolated private static let freeSpaceSource = Locked<(@Sendable (URL) -> Int64?)?>(nil)

  /// Free space below which a recording is warned about (100 MB by default); shared by every recorder.
  public nonisolated static var diskSpaceWarningThreshold: Int64 {
    get { thresholds.withLock { $0.warning } }
    set { thresholds.withLock { $0.warning = newValue } }
  }

  /// Free space below which a recording stops by itself, and none starts (50 MB by default); shared by
  /// every recorder.
  public nonisolated static var diskSpaceCriticalThreshold: Int64 {
    get { thresholds.withLock { $0.critical } }
    set { thresholds.withLock { $0.critical = newValue } }
  }

  /// Replaces where free space is read from (nil: the filesystem of ``recordingsDirectory``), for tests.
  public nonisolated static func setFreeSpaceSource(_ source: (@Sendable (URL) -> Int64?)?) {
    freeSpaceSource.withLock { $0 = source }
  }

  /// The free space, in bytes, of the filesystem that holds ``recordingsDirectory`` (0 when unknown).
  public nonisolated static func availableDiskSpace() -> Int64 {
    let directory = recordingsDirectory
    if let source = freeSpaceSource.withLock({ $0 }) { return source(directory) ?? 0 }
    var path = directory
    while !FileManager.default.fileExists(atPath: path.path), path.path != "/" { path.deleteLastPathComponent() }
    var info = statvfs()
    guard statvfs(path.path, &info) == 0 else { return 0 }
    let (product, overflow) = Int64(info.f_bavail).multipliedReportingOverflow(by: Int64(info.f_frsize))
    return overflow ? .max : product
  }

  /// How often a recording checks the free space.
  public nonisolated static let diskSpaceCheckInterval = Duration.seconds(5)

  /// Checks the free space against the thresholds now (a recording does every
  /// ``diskSpaceCheckInterval``): below the warning threshold ``diskSpaceWarning`` says so; below the
  /// critical one the recording stops by itself.
  public func checkDiskSpace() {
    guard state == .recording || state == .paused else { return }
    let available = Self.availableDiskSpace()
    let (warning, critical) = (Self.diskSpaceWarningThreshold, Self.diskSpaceCriticalThreshold)
    if available < critical {
      diskSpaceWarning = .criticalStopped(available: available, threshold: critical)
      finish(completion: nil)
    } else if available < warning {
      diskSpaceWarning = .warning(available: available, threshold: warning)
    }
  }

  // MARK: Recording

  /// Starts recording into `fileName` + `.mp4` in ``recordingsDirectory``.
  ///
  /// - Throws: ``RecordingError/insufficientDiskSpace(available:required:)`` below the critical
  ///   threshold; `NSError` of domain ``RecordingEngine/domain``: −1 while recording, paused or
  ///   finalizing, −2 when the file exists, −3 when the writer cannot start (no track, a name that is not
  ///   a plain file name, an unusable size or rate) — or the system's error when it says why.
  public func startRecording(fileName: String) throws { try startRecording(fileName: fileName, leavingOut: []) }

  /// Starts recording as ``startRecording(fileName:)`` does, with `cuts` of the tracks' own time left out
  /// in advance as pauses would be (a recording of a file paused at known times: `tipipe record
  /// --pause-at S --resume-at S`), and the file's 0 at the tracks' time `start` (nil: the first frame of
  /// either track): a file's tracks start together at the file's start, whichever frame comes first —
  /// a sound starting a few milliseconds after the picture must not make the first picture too early.
  public func startRecording(fileName: String, leavingOut cuts: [MediaRange], from start: MediaTime? = nil) throws {
    guard state == .idle else {
      throw RecordingEngine.error(RecordingEngine.busy, "this recorder is already recording or finishing a file")
    }
    guard videoTrack != nil || audioTrack != nil else {
      throw RecordingEngine.error(RecordingEngine.writerFailed, "a recorder needs a video or an audio track")
    }
    let name = fileName + ".mp4"
    guard RecordingName.isValid(fileName) else {
      throw RecordingEngine.error(RecordingEngine.writerFailed, "\"\(fileName)\" is not a file name")
    }
    let available = Self.availableDiskSpace()
    let critical = Self.diskSpaceCriticalThreshold
    guard available >= critical else {
      throw RecordingError.insufficientDiskSpace(available: available, required: critical)
    }
    let directory = Self.recordingsDirectory
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let url = directory.appendingPathComponent(name)
    // The name is taken atomically: two recorders never write one file, and an existing one is never
    // replaced.
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard descriptor >= 0 else {
      if errno == EEXIST {
        throw RecordingEngine.error(RecordingEngine.fileExists, "a recording named \(name) already exists")
      }
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    let identity = FileIdentity(descriptor: descriptor)
    close(descriptor)
    let session: RecordingSession
    do {
      session = try RecordingSession(
        url: url, video: videoTrack, audio: audioTrack, fps: videoFps, size: videoSize, cuts: cuts, origin: start)
      // The session's graph keeps this handler: it names the session by identity, never holds it (a
      // strong capture was a cycle — session → pipeline → handler → session — that LeakSanitizer found).
      let id = ObjectIdentifier(session)
      try session.start { [weak self] result in
        Task { @MainActor in self?.ended(session: id, result) }
      }
    } catch {
      identity?.unlink(url)
      // The system's error when it said why (the seed), else writerFailed (-3).
      let failure = MediaError(error)
      throw RecordingEngine.error(
        for: MediaError(failure.kind, "the file writer could not start: \(failure.message)", cause: failure.cause))
    }
    self.session = session
    current = (url, fileName, identity ?? FileIdentity(device: 0, inode: 0))
    diskSpaceWarning = nil
    lastError = nil
    state = .recording
    checkDiskSpace()
    diskWatch?.cancel()
    diskWatch = Task { [weak self] in
      while !Task.isCancelled {
        try? await Task.sleep(for: Self.diskSpaceCheckInterval)
        guard !Task.isCancelled, let self else { return }
        self.checkDiskSpace()
      }
    }
  }

  /// Leaves out what the tracks carry from now (the end of the latest frame they carried) until
  /// ``resumeRecording()``; nothing without a recording.
  public func pauseRecording() {
    guard state == .recording, let session else { return }
    session.pause(at: now)
    state = .paused
  }

  /// Records again after ``pauseRecording()``, from the end of the latest frame the tracks carried: the
  /// stretch between is not in the file.
  public func resumeRecording() {
    guard state == .paused, let session else { return }
    session.resume(at: now)
    state = .recording
  }

  /// Leaves `range` of the tracks' own time out of the recording under way, from any thread, as a pause
  /// would: a stretch the caller knows holds nothing of any track (a replay's hole, skipped by the play
  /// it records) is closed up instead of held. Call it before the tracks carry a frame past `range`: a
  /// frame already placed stays where it is. Nothing without a recording.
  public nonisolated func leaveOut(_ range: MediaRange) {
    sessionForCuts.withLock { $0 }?.leaveOut(range)
  }

  /// The tracks' "now": where the latest frame either carried ends (before any: as early as can be).
  private var now: MediaTime {
    [videoTrack?.latestEnd, audioTrack?.latestEnd].compactMap { $0 }.max() ?? MediaTime(microseconds: .min)
  }

  /// Stops and finishes the file; returns at once. The state is ``RecorderState/finalizing`` until the
  /// file is complete; then `completion` runs on the main actor with the file, or nil when nothing was
  /// recording or the file could not be written.
  public func stopRecording(completion: (@MainActor (RecordingFileInfo?) -> Void)? = nil) {
    guard state == .recording || state == .paused else {
      completion?(nil)
      return
    }
    finish(completion: completion)
  }

  private func finish(completion: (@MainActor (RecordingFileInfo?) -> Void)?) {
    guard let session else { return }
    diskWatch?.cancel()
    diskWatch = nil
    self.completion = completion
    state = .finalizing
    session.stop()
  }

  private func ended(session ended: ObjectIdentifier, _ result: Result<MediaDuration, MediaError>) {
    guard let session, ObjectIdentifier(session) == ended, let current else { return }
    self.session = nil
    self.current = nil
    diskWatch?.cancel()
    diskWatch = nil
    let done = completion
    completion = nil
    var file: RecordingFileInfo?
    switch result {
    case .success(let duration):
      file = Self.info(at: current.url, duration: Double(duration.microseconds) / 1e6)
    case .failure(let error):
      // The recording stopped by itself (RC37): what was written is kept and is the finished file (RC24);
      // a file with nothing readable in it was not written (RC25) and does not keep the name. Tracks that
      // carried no frame are not a failure of the writer: no file, and no error (lastError is for writes).
      if error.kind != .noMedia { lastError = RecordingEngine.error(for: error) }
      if let probed = try? MediaFileSource.probe(path: current.url.path), probed.duration > .zero {
        file = Self.info(at: current.url, duration: Double(probed.duration.microseconds) / 1e6)
      } else {
        // Only the file this recording made: one put under the name meanwhile is not ours to remove.
        current.file.unlink(current.url)
      }
    }
    if let file { lastFinishedFile = file }
    state = .idle
    done?(file)
  }

  // MARK: Changes without a UI

  /// The states the recorder goes through from now on, for code without a UI.
  public var changes: AsyncStream<RecorderState> {
    let (stream, continuation) = AsyncStream.makeStream(of: RecorderState.self)
    let key = UUID()
    continuations[key] = continuation
    continuation.onTermination = { [weak self] _ in
      Task { @MainActor in self?.continuations[key] = nil }
    }
    return stream
  }

  private func announce() {
    for continuation in continuations.values { continuation.yield(state) }
  }
}

/// What a recording's name may be: one plain path component (not `.` or `..`), short enough to take
/// `.mp4`.
/// What a recording may be named: one file name of at most 251 bytes (with `.mp4`, 255), not `.` or `..`.
package enum RecordingName {
  /// True when `name` names a file in the recordings folder and nothing else.
  package static func isValid(_ name: String) -> Bool {
    !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
      && name.utf8.count <= 251
  }
}

/// A file's identity (device and inode): a name can be given to another file while a recording runs.
struct FileIdentity: Equatable {
  var device: UInt64
  var inode: UInt64

  init(device: UInt64, inode: UInt64) {
    self.device = device
    self.inode = inode
  }

  /// The identity of the open file `descriptor`, nil when it cannot be read.
  init?(descriptor: Int32) {
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { return nil }
    self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
  }

  /// Removes `url` if it is still this file.
  func unlink(_ url: URL) {
    var status = stat()
    guard lstat(url.path, &status) == 0, UInt64(status.st_dev) == device, UInt64(status.st_ino) == inode else {
      return
    }
    Foundation.unlink(url.path)
  }
}
