import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage
import TrackRecording

/// `tipipe record` (`spec/cli.md`): a media file's decoded picture and sound through a TrackRecorder
/// (seed 003) into `<data root>/Recordings/NAME.mp4`, and the management of those files.
enum RecordCommand {
  static let summary = "record a file's decoded media into a fragmented MP4 (TrackRecorder), list/delete"
  static let usage = """
    usage: tipipe record --input FILE --name NAME [--fps 20] [--size 1280x720]
                         [--pause-at S --resume-at S]… [--no-audio] [--no-video] [--data-root DIR] [--quiet]
           tipipe record --endpoint E [--token K] --start T --end T --video-channel N
                         [--audio-channel N] [--pace realtime|fast] [--cache DIR] --name NAME [the options above]
           tipipe record --input FILE --input FILE… --grid --name NAME [the options above]
           tipipe record --list [--json] [--data-root DIR]
           tipipe record --delete ID | --delete-all [--data-root DIR]

    Decodes FILE and records it through a TrackRecorder: pictures fitted inside --size with black bars
    at a constant --fps, H.264 (libx264 veryfast) and AAC, fragmented MP4 written one fragment per
    second. NAME gets .mp4 added (NAME.mp4 gives NAME.mp4.mp4); the file goes to
    <data root>/Recordings (data root: --data-root, $XDG_DATA_HOME/tirtc or ~/.local/share/tirtc).
    --pause-at/--resume-at pairs (seconds of FILE from its start) leave those stretches out. Prints
    {"file":…,"duration_ms":…,"id":…}. A name that exists is exit 1 (fileExists, -2).
    --recorders N (1…8) records the same tracks N times at once (NAME, NAME-2…): one line each.
    --endpoint records what a Replay of [--start, --end) presents (its video channel, and its audio
    channel when given; pauses in seconds from --start), as it plays (--pace realtime, the default) or as
    fast as the recorder takes it (--pace fast); a hole the play skips (a gap of every recorded track) is
    closed up in the file, as the play showed it; the recording ends with the play. SIGINT, SIGTERM and
    SIGHUP end the play early: what was recorded is kept and reported, then the error line (exit 1).
    --grid composes several files: their pictures side by side in a grid (VideoCompositor), their sound
    mixed (AudioCompositor, 48 kHz stereo), each file from its start (a track starting 2 s into its file
    starts 2 s into the recording); the recording ends with the longest file.
    A sound of FILE that starts after its picture is recorded in its place, silence before it (a picture
    that starts later: its first picture held), up to about 2 minutes in (less when the other's encoded
    media passes 64 MB first); a later one is not waited for, and a warning says the recording lacks it. A track in a codec not read (MP3, Opus, VP9…) is said in a
    warning. A damaged packet of FILE is skipped, as ffmpeg skips it (a warning counts them). A FILE
    whose reading fails, or SIGINT, SIGTERM or SIGHUP (a second one stops at once), ends the recording
    early: what was recorded is kept and reported, then the error line (exit 1). Warnings go to stderr;
    --quiet leaves only the error line there.
    """

  static let flags: [String: FlagParser.Kind] = [
    "--input": .repeated, "--grid": .boolean, "--name": .value, "--fps": .value, "--size": .value,
    "--pause-at": .repeated,
    "--resume-at": .repeated, "--no-audio": .boolean, "--no-video": .boolean, "--data-root": .value,
    "--list": .boolean, "--json": .boolean, "--delete": .value, "--delete-all": .boolean,
    "--recorders": .value, "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value,
    "--video-channel": .value, "--audio-channel": .value, "--pace": .value, "--cache": .value, "--quiet": .boolean,
  ]

  static func run(_ arguments: [String]) throws -> Int32 {
    // The endpoint form runs the main queue on this thread until the process exits: it parses on its own.
    if arguments.contains("--endpoint") { try ReplayRecording.runIfAsked(arguments) }
    let flags = try FlagParser(arguments, known: flags)
    try setDataRoot(flags)
    if flags.has("--list") { return try list(json: flags.has("--json")) }
    if let id = flags.string("--delete") {
      do { try TrackRecorder.deleteRecording(fileId: id) } catch {
        throw TiError(
          .recordingNotFound, "no recording \(id) in \(TrackRecorder.recordingsDirectory.path)", domain: .storage)
      }
      return 0
    }
    if flags.has("--delete-all") {
      try TrackRecorder.deleteAllRecordings()
      return 0
    }
    let options = try Options(flags)
    let inputs = flags.all("--input")
    guard !inputs.isEmpty else { throw UsageError(message: "--input or --endpoint is required") }
    guard inputs.count == 1 || flags.has("--grid") else {
      throw UsageError(message: "several --input files need --grid (they are composed into one picture)")
    }
    guard inputs.count <= 16 else { throw UsageError(message: "at most 16 --input files") }
    let (name, fps, copies, size) = (options.name, options.fps, options.copies, options.size)
    // Files composed together each start at 0 (as ffmpeg reads each input from its start): a track that
    // starts late in its file starts as late in the composition, whatever the other files' times.
    let grid = flags.has("--grid")
    let start = grid ? MediaTime(microseconds: 0) : nil
    let files = try inputs.map {
      try FileTracks(path: $0, video: options.video, audio: options.audio, startTime: start)
    }
    // A track in a codec that is not read is said, not left out silently (--quiet: only the error line).
    let quiet = flags.has("--quiet")
    for (file, path) in zip(files, inputs) where !quiet {
      for track in file.unread {
        StandardError.write(Data("warning: \(path.oneLine): \(track) is not read: the recording has none of it\n".utf8))
      }
    }
    let cuts = options.cuts(from: files[0].mediaStart)
    // The recording starts where the first of the tracks taken starts, whichever frame comes first (a
    // sound recorded alone starts with its first frame, not with the file's picture); composed files each
    // keep their place from there.
    let origin = files.map(\.tracksStart).min() ?? files[0].tracksStart
    // One file is recorded as it is; several are composed first, and the recorder takes the compositions.
    var video = files[0].video
    var audio = files[0].audio
    var compositors: [AnyObject] = []
    if grid {
      let videos = files.compactMap(\.video)
      let audios = files.compactMap(\.audio)
      if !videos.isEmpty {
        // Files' tracks are not live: a slow one (a huge picture, a busy machine) is waited for up to 5 s.
        let compositor = try VideoCompositor(tracks: videos, size: size, fps: fps, origin: origin)
        video = compositor.outputTrack
        try compositor.start()
        compositors.append(compositor)
      }
      if !audios.isEmpty {
        let compositor = try AudioCompositor(tracks: audios, origin: origin)
        audio = compositor.outputTrack
        try compositor.start()
        compositors.append(compositor)
      }
    }
    // The compositors live until the recording is written.
    return try withExtendedLifetime(compositors) {
      try MainActor.assumeIsolated {
        try record(
          files, video: video, audio: audio, origin: origin, name: name, fps: fps, size: size, cuts: cuts,
          copies: copies, quiet: quiet)
      }
    }
  }

  @MainActor
  private static func record(
    _ files: [FileTracks], video videoTrack: MediaTrack?, audio audioTrack: MediaTrack?, origin: MediaTime,
    name: String, fps: Int,
    size: VideoSize, cuts: [MediaRange], copies: Int, quiet: Bool
  ) throws -> Int32 {
    // From here on a signal ends the reading where it is: what was read is decoded, the tracks end, every
    // recorder finishes its file (the encoders' pictures in flight included), what was recorded is
    // reported and then the error line, as `record --endpoint` does; a recording with nothing in it leaves
    // no file.
    // A reading held back by a full edge (a compositor waiting for another input) does not look at the
    // stop: 3 s later, or at a second signal, the files stop where they are and the tracks end.
    let interruption = Locked<TiError?>(nil)
    Interruption.shared.onSignal { signal in
      let first = interruption.withLock { ending -> Bool in
        defer { ending = ending ?? Interruption.cancellation(by: signal) }
        return ending == nil
      }
      guard first else {
        for file in files { file.stop() }
        return
      }
      for file in files { file.finishReading() }
      DispatchQueue.global().asyncAfter(deadline: .now() + 3) { for file in files { file.stop() } }
    }
    defer { Interruption.shared.removeHandler() }
    let (recorders, failure) = startRecorders(
      video: videoTrack, audio: audioTrack, name: name, fps: fps, size: size, cuts: cuts, origin: origin,
      copies: copies)
    var idle = false
    if let failure {
      whenIdle(recorders) { idle = true }
      while !idle { _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05)) }
      return try fail(failure)
    }
    // (After a signal the files start and end at once: nothing is read, and the tracks end.)
    for file in files { try file.start() }
    // The tracks end with the file; a recorder then finishes its own (it stops by itself once every track
    // has ended).
    whenIdle(recorders) { idle = true }
    while !idle { _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05)) }
    for file in files { file.stop() }
    // Damaged packets were skipped, as ffmpeg skips them: said, since their frames are missing.
    let damaged = files.reduce(0) { $0 + $1.damagedPackets }
    if damaged > 0 && !quiet {
      StandardError.write(
        Data(
          "warning: \(damaged) damaged packet\(damaged == 1 ? " was" : "s were") skipped: their frames are missing\n"
            .utf8))
    }
    // A track the input has and the recording lacks is said: the recorder waits for a file's track only
    // so long (a sound beginning minutes after the picture, or none of whose frames decodes).
    if !quiet, let file = recorders.first?.lastFinishedFile,
      let recorded = try? MediaFileSource.probe(path: file.url.path)
    {
      let lacking = [(videoTrack, recorded.video == nil, "picture"), (audioTrack, recorded.audio == nil, "sound")]
      for (track, missing, word) in lacking where track != nil && missing {
        let wait = FragmentedMP4Writer.fileTrackWait.microseconds / 1_000_000
        let bytes = FragmentedMP4Writer.waitingBytes >> 20
        StandardError.write(
          Data(
            ("warning: the recording has no \(word): none came while the recorder waited for it "
              + "(\(wait) s of the input, or \(bytes) MB of its encoded media)\n").utf8))
      }
    }
    // Ended early: what was recorded is kept and reported, then why (exit 1) — a reading that failed (a
    // signal's stop is no failure), else the signal.
    var ending: (any Error)? = interruption.withLock { $0 }
    if let failure = files.lazy.compactMap(\.failure).first { ending = failure }
    if let ending {
      if recorders.contains(where: { $0.lastFinishedFile != nil }) { try report(recorders) }
      throw ending
    }
    try report(recorders)
    return 0
  }

  /// Starts `copies` recorders of the tracks (`--recorders N`: NAME, NAME-2…, each its own file and
  /// graph). When one cannot start, those already started are stopped (with no frame recorded, their
  /// files are removed: a name is not kept by a recording that never ran) and the failure is returned
  /// with them, for the caller to wait until they are idle and then report it (``fail(_:)``). Each file's
  /// 0 is at the tracks' time `origin` (nil: their first frame).
  @MainActor
  static func startRecorders(
    video videoTrack: MediaTrack?, audio audioTrack: MediaTrack?, name: String, fps: Int, size: VideoSize,
    cuts: [MediaRange], origin: MediaTime? = nil, copies: Int
  ) -> (recorders: [TrackRecorder], failure: (any Error)?) {
    let names = [name] + (1..<copies).map { "\(name)-\($0 + 1)" }
    var recorders: [TrackRecorder] = []
    for name in names {
      let recorder = TrackRecorder(videoTrack: videoTrack, audioTrack: audioTrack, videoFps: fps, videoSize: size)
      do {
        try recorder.startRecording(fileName: name, leavingOut: cuts, from: origin)
      } catch {
        for started in recorders { started.stopRecording() }
        return (recorders, error)
      }
      recorders.append(recorder)
    }
    return (recorders, nil)
  }

  /// A recorder's `lastError` (seed 003: the system's error or `RecordingEngine`'s) as the command line
  /// reports it: the engine's failure under it with its own seed-000 code, else `fileWriteFailed`.
  static func recordingFailure(_ error: any Error) -> TiError {
    let info = (error as NSError).userInfo
    if let engine = info[NSUnderlyingErrorKey] as? MediaError { return TiError(engine) }
    // Foundation's file errors (the recordings folder cannot be made): the path and the system's reason.
    if let file = error as? CocoaError, let path = file.filePath ?? file.url?.path {
      let system = file.underlying.map { String(cString: strerror(Int32(($0 as NSError).code))) }
      return TiError(
        .fileWriteFailed, "cannot create \(path): \(system ?? "\(file.code.rawValue)")", domain: .storage, cause: error)
    }
    return TiError(.fileWriteFailed, error.localizedDescription, domain: .storage, cause: error)
  }

  /// Reports a recorder that could not start: the seed's own codes as `error: fileExists (-2): …`
  /// (spec/cli.md) and exit 1; the system's error (seed 003 hands it on) and a disk too full as seed-000
  /// errors; anything else thrown.
  static func fail(_ failure: any Error) throws -> Int32 {
    switch failure {
    case let error as NSError where error.domain == NSPOSIXErrorDomain || error.domain == NSCocoaErrorDomain:
      throw recordingFailure(error)
    case let error as NSError where error.domain == RecordingEngine.domain:
      let codes = [RecordingEngine.busy: "busy", RecordingEngine.fileExists: "fileExists"]
      let line =
        "error: \(codes[error.code] ?? "writerFailed") (\(error.code)): \(error.localizedDescription.oneLine)\n"
      StandardError.write(Data(line.utf8))
      return 1
    case RecordingError.insufficientDiskSpace(let available, let required):
      throw TiError(
        .resourceExhausted, "\(available) bytes free, \(required) needed to start recording", domain: .storage)
    default:
      throw failure
    }
  }

  /// Calls `done` on the main actor once every recorder is idle (its file complete or given up).
  @MainActor
  static func whenIdle(_ recorders: [TrackRecorder], _ done: @escaping @MainActor () -> Void) {
    Task { @MainActor in
      // The state is read and the stream subscribed in one turn of the main actor: no change is missed.
      for recorder in recorders where recorder.state != .idle {
        for await state in recorder.changes where state == .idle { break }
      }
      done()
    }
  }

  /// Prints each recorder's finished file as one JSON line; throws the first recorder's failure.
  @MainActor
  static func report(_ recorders: [TrackRecorder]) throws {
    var lines = ""
    for recorder in recorders {
      if let error = recorder.lastError { throw Self.recordingFailure(error) }
      guard let file = recorder.lastFinishedFile else {
        throw TiError(.noRecordableMedia, "nothing was recorded: the tracks carried no frame")
      }
      lines +=
        "{\"file\":\(PlayCommand.jsonString(file.url.path)),\"duration_ms\":\(Int64(file.duration * 1000)),\"id\":\(PlayCommand.jsonString(file.id))}\n"
    }
    if let error = StandardOutput.write(Data(lines.utf8)) { throw error }
  }

  /// `--data-root DIR`: where the recordings go.
  static func setDataRoot(_ flags: FlagParser) throws {
    guard let root = flags.string("--data-root") else { return }
    guard !root.isEmpty else { throw UsageError(message: "--data-root needs a directory") }
    TrackRecorder.dataRoot = URL(fileURLWithPath: root, isDirectory: true)
  }

  /// What every form of a recording takes: the name, the picture, the tracks and the pauses.
  struct Options: Sendable {
    var name: String
    var fps: Int
    var copies: Int
    var size: VideoSize
    var video: Bool
    var audio: Bool
    /// `--pause-at`/`--resume-at` pairs, from the source's start, merged where they overlap.
    var pauses: [(pause: MediaDuration, resume: MediaDuration)]

    init(_ flags: FlagParser) throws {
      name = try flags.required("--name")
      guard RecordingName.isValid(name) else {
        throw UsageError(
          message: "--name must be a file name (not empty, . or .., no /, at most 251 bytes), not \(name.oneLine)")
      }
      fps = try flags.integer("--fps", default: 20, range: 1...240)
      copies = try flags.integer("--recorders", default: 1, range: 1...8)
      size = try RecordCommand.videoSize(flags.string("--size"))
      video = !flags.has("--no-video")
      audio = !flags.has("--no-audio")
      guard video || audio else { throw UsageError(message: "--no-audio and --no-video leave nothing to record") }
      let pauses = try flags.all("--pause-at").map { try FileExportCommand.offset("--pause-at", $0) }
      let resumes = try flags.all("--resume-at").map { try FileExportCommand.offset("--resume-at", $0) }
      guard pauses.count == resumes.count else { throw UsageError(message: "each --pause-at needs a --resume-at") }
      var pairs: [(pause: MediaDuration, resume: MediaDuration)] = []
      for (pause, resume) in zip(pauses, resumes).sorted(by: { $0.0 < $1.0 }) {
        guard pause < resume else { throw UsageError(message: "each --pause-at must be before its --resume-at") }
        // Overlapping pauses are one pause (time left out once).
        if let last = pairs.last, pause <= last.resume {
          pairs[pairs.count - 1].resume = max(last.resume, resume)
        } else {
          pairs.append((pause, resume))
        }
      }
      self.pauses = pairs
    }

    /// The pauses as cuts of source time, for a source starting at `start`.
    func cuts(from start: MediaTime) -> [MediaRange] {
      let far = MediaTime(microseconds: .max)
      return pauses.map {
        MediaRange(
          start: start.advanced(by: $0.pause, notAfter: far), end: start.advanced(by: $0.resume, notAfter: far))
      }
    }
  }

  private static func list(json asJSON: Bool) throws -> Int32 {
    let files = TrackRecorder.getRecordingList()
    var text = ""
    if asJSON {
      text =
        "["
        + files.map {
          "{\"id\":\(PlayCommand.jsonString($0.id)),\"file\":\(PlayCommand.jsonString($0.url.path)),\"duration_ms\":\(Int64($0.duration * 1000)),\"bytes\":\($0.size)}"
        }.joined(separator: ",") + "]\n"
    } else {
      // One line a recording whatever its name holds (a newline is shown as \n; --json gives it exactly).
      for file in files {
        text += file.id.oneLine + String(format: "  %8.1f s  %10lld bytes\n", file.duration, file.size)
      }
    }
    if let error = StandardOutput.write(Data(text.utf8)) { throw error }
    return 0
  }

  /// `--size WxH`: even, 16…4096 each; 1280x720 by default.
  static func videoSize(_ text: String?) throws -> VideoSize {
    guard let text else { return .hd720 }
    let parts = text.split(separator: "x", omittingEmptySubsequences: false)
    guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), (16...4096).contains(width),
      (16...4096).contains(height), width % 2 == 0, height % 2 == 0
    else { throw UsageError(message: "--size must be WIDTHxHEIGHT, even, 16…4096 each, not '\(text)'") }
    return VideoSize(width: width, height: height)
  }
}
