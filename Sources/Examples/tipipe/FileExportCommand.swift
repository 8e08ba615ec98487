import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe export --input FILE` (`spec/cli.md`): a range of a media file into one MP4, with the report as
/// JSON, its times in milliseconds from the file's start.
enum FileExportCommand {
  static let flags: [String: FlagParser.Kind] = [
    "--input": .value, "--start": .value, "--end": .value, "--out": .value, "--report": .value, "--cut": .value,
    "--quiet": .boolean, "--progress-lines": .boolean,
  ]

  /// `12.5`, `90`, `1:02.25`, `01:00:00`: seconds from the file's start (or, as `meaning` says, a
  /// period), to the microsecond.
  static func offset(
    _ flag: String, _ text: String, meaning: String = "seconds from the file's start"
  ) throws -> MediaDuration {
    let invalid = { (flag: String, text: String) in
      UsageError(message: "\(flag) must be \(meaning) (12.5, 1:02.5, 01:00:00), not '\(text)'")
    }
    let fields = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...3).contains(fields.count) else { throw invalid(flag, text) }
    var seconds: Int64 = 0
    var fraction: Int64 = 0
    for (position, field) in fields.enumerated() {
      let last = position == fields.count - 1
      let pieces = field.split(separator: ".", omittingEmptySubsequences: false)
      guard pieces.count == 1 || (last && pieces.count == 2), !pieces[0].isEmpty, pieces[0].count <= 12,
        pieces[0].allSatisfy(\.isASCIIDigit), let whole = Int64(pieces[0]), position == 0 || whole < 60
      else { throw invalid(flag, text) }
      seconds = seconds * 60 + whole
      if pieces.count == 2 {
        let digits = pieces[1]
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy(\.isASCIIDigit) else { throw invalid(flag, text) }
        fraction = Int64(digits.padding(toLength: 6, withPad: "0", startingAt: 0)) ?? 0
      }
    }
    // At most a century: far inside MediaTime's range, whatever the file's start.
    guard seconds <= 100 * 365 * 86_400 else { throw invalid(flag, text) }
    return .microseconds(seconds * 1_000_000 + fraction)
  }

  static func run(_ arguments: [String]) throws -> Int32 {
    // A flag of a library's export is not "unknown": it is one this form does not take.
    if let misplaced = arguments.first(where: { Self.flags[$0] == nil && ExportCommand.flags[$0] != nil }) {
      throw UsageError(message: "\(misplaced) is for an export of a library (--endpoint), not of a file (--input)")
    }
    let flags = try FlagParser(arguments, known: flags)
    let input = try flags.required("--input")
    let out = try outputPath("--out", try flags.required("--out"))
    let reportPath = flags.string("--report")
    if let reportPath, reportPath != "-" {
      guard !OutputFile.sameFile(try outputPath("--report", reportPath), out) else {
        throw UsageError(message: "--report and --out name the same file")
      }
    }
    let cutName = flags.string("--cut") ?? "keyframe"
    guard let askedCut = ExportJob.Cut(rawValue: cutName) else {
      throw UsageError(message: "--cut must be keyframe or exact, not '\(cutName)'")
    }
    guard let startText = flags.string("--start") else { throw UsageError(message: "--start is required") }
    let startOffset = try offset("--start", startText)
    let endOffset = try flags.string("--end").map { try offset("--end", $0) }
    // The report counts milliseconds (Q11: its end after its start): a range is at least one long.
    if let endOffset, endOffset.microseconds - startOffset.microseconds < 1_000 {
      throw UsageError(message: "--start must be before --end, by 1 ms at least")
    }
    let inputURL = URL(fileURLWithPath: input)
    guard !OutputFile.sameFile(inputURL, out) else {
      throw UsageError(message: "--out names the input file; it is not replaced")
    }
    if let reportPath, reportPath != "-", OutputFile.sameFile(inputURL, URL(fileURLWithPath: reportPath)) {
      throw UsageError(message: "--report names the input file; it is not replaced")
    }

    let info = try MediaFileSource.probe(path: input)
    guard let video = info.video, video.packets > 0 else {
      throw MediaError.gap(.trackUnavailable, "\(input) has no H.264/H.265 video to export")
    }
    let origin = info.start
    let asked = origin.advanced(by: startOffset, notAfter: MediaTime(microseconds: .max))
    // The export follows the picture. A start before the video's first picture by no more than a silence
    // the export tolerates begins at the picture, and the report's range with it (a remux to MKV, MPEG-TS
    // or FLV makes the AAC encoder's priming a sound 21–80 ms ahead of the picture: `--start 0` reported
    // that head as a gap, incomplete). An earlier start stays the one asked (the report's range is the
    // request, E20): the stretch before the picture is a gap there, as in a library's export — and said,
    // with the sound alone in it that is not written.
    let head = (try? video.range.start - asked) ?? .zero
    let start = head > .zero && head <= GapDetector.audioTolerance ? video.range.start : asked
    let end = endOffset.map { origin.advanced(by: $0, notAfter: MediaTime(microseconds: .max)) } ?? video.range.end
    let fromStart = { (time: MediaTime) in Self.seconds((try? time - origin) ?? .zero) }
    guard end > video.range.start else {
      throw UsageError(message: "--end is at or before the file's first picture (\(fromStart(video.range.start)) s)")
    }
    // What is written ends with the video, whatever --end says.
    guard let length = try? min(end, video.range.end) - start, length >= .microseconds(1_000) else {
      throw UsageError(
        message: "--start is at or after the end of the file's video (\(fromStart(video.range.end)) s), "
          + "or less than 1 ms before it")
    }
    let quiet = flags.has("--quiet")
    if let audio = info.audio, !quiet,
      let alone = try? video.range.start - max(asked, audio.range.start), alone > GapDetector.audioTolerance
    {
      StandardError.write(
        Data(
          ("warning: the export starts at the file's first picture (\(fromStart(video.range.start)) s): the "
            + "\(Self.seconds(alone)) s of sound alone before it are not written (a gap in the report)\n")
            .utf8))
    }
    // A keyframe cut starts at a keyframe the file shows: where the file starts inside a group of pictures
    // whose keyframe its edit list hides (a file cut without re-encoding), the part of that group it shows
    // is re-encoded, as an exact cut does (copying from the hidden keyframe showed what the file hides).
    let cut = askedCut.showing(info, from: start)
    if cut != askedCut, !quiet {
      let reencoded = (try? (info.keyframes.first ?? video.range.end) - max(start, video.range.start)) ?? .zero
      StandardError.write(
        Data(
          ("note: the file starts inside a group of pictures its edit list cut: its first "
            + "\(Self.seconds(reencoded)) s are re-encoded\n").utf8))
    }
    // Sound in a codec the export does not carry (MP3, Opus, AC-3, PCM…) is still asked for: the file is
    // written without it, and the report says so (an audio gap over the range, not complete), instead of a
    // silent video-only file reported complete.
    let unreadSound = info.audio == nil ? info.tracks.first { $0.kind == .audio } : nil
    if let unreadSound, !quiet {
      StandardError.write(
        Data(
          ("warning: the sound (\(unreadSound.codecName.oneLine)) is not AAC or G.711: "
            + "the file is written without it, and the report says so\n").utf8))
    }
    let showProgress = !quiet && isatty(STDERR_FILENO) == 1
    let progressLines = flags.has("--progress-lines")
    var damaged: [MediaFileSource.DamagedPackets] = []
    func export(_ cut: ExportJob.Cut) throws -> ExportResult {
      let source = MediaFileSource(path: input)
      damaged.append(source.damaged)
      let request = ExportJob.Request(
        range: MediaRange(start: start, end: end), videoTrack: TrackID(.video, channel: 0),
        audioTrack: info.audio == nil && unreadSound == nil ? nil : TrackID(.audio, channel: 1), output: out, cut: cut)
      let job = try ExportJob(
        request: request, packets: source,
        progress: { fraction, covered in
          if progressLines {
            StandardError.write(Data("{\"progress\":\(fraction),\"covered_ms\":\(covered)}\n".utf8))
          } else if showProgress {
            StandardError.write(
              Data(String(format: "\r%5.1f%%  %.1f s covered", fraction * 100, Double(covered) / 1000).utf8))
          }
        }, completion: { _ in })
      Interruption.shared.onSignal { _ in job.cancel() }
      defer { Interruption.shared.removeHandler() }
      return job.waitForResult()
    }
    var result = try export(cut)
    // Pictures an exact cut does not re-encode (10-bit, 4:2:2, odd sizes): the keyframe cut asked for,
    // from the keyframe the file hides, said.
    if cut != askedCut, result.error?.causes.contains(where: { $0 is ExactCut.Refusal }) == true {
      if !quiet {
        StandardError.write(
          Data(
            ("warning: \(result.message?.oneLine ?? ""): the export starts at the keyframe the file's edit list "
              + "hides, with the pictures it hides\n").utf8))
      }
      result = try export(askedCut)
    }
    if showProgress { StandardError.write(Data("\n".utf8)) }
    // Damaged packets were skipped, as ffmpeg skips them (as `record` says): said, since their frames are
    // missing.
    if let skipped = damaged.last?.count, skipped > 0, !quiet {
      StandardError.write(
        Data(
          "warning: \(skipped) damaged packet\(skipped == 1 ? " was" : "s were") skipped: their frames are missing\n"
            .utf8))
    }
    let report = relative(result.report, to: origin)
    // As `export` does: the export's own failure is the one line said, before a report left unwritten.
    var unwritten: (any Error)?
    if let reportPath {
      do {
        try ExportCommand.Output(
          code: result.code.rawValue, file: result.file?.path, durationMs: result.durationMs, report: report
        ).write(to: reportPath)
      } catch {
        unwritten = error
      }
    }
    guard result.code == .ok, let file = result.file else {
      reportError(TiError(result.code, result.message ?? "the export ended \(report.termination)"))
      return 1
    }
    if let unwritten { throw unwritten }
    if showProgress {
      ExportCommand.wrote(
        file.path, covered: report.coveredDurationMs, segments: report.segments.count, gaps: report.gaps.count,
        complete: report.complete)
    }
    return 0
  }

  /// `duration` as the command's messages give it: seconds, to the millisecond.
  static func seconds(_ duration: MediaDuration) -> String {
    String(format: "%.3f", Double(duration.microseconds) / 1e6)
  }

  /// The report with its times in milliseconds from `origin` (the file's start).
  static func relative(_ report: ExportReport, to origin: MediaTime) -> ExportReport {
    let shift = origin.milliseconds
    func move(_ range: ExportReport.Range) -> ExportReport.Range {
      ExportReport.Range(startMs: range.startMs - shift, endMs: range.endMs - shift)
    }
    var moved = report
    moved.requestedRange = move(report.requestedRange)
    moved.segments = report.segments.map {
      ExportReport.Segment(
        sourceRange: move($0.sourceRange), outputStartMs: $0.outputStartMs, outputEndMs: $0.outputEndMs)
    }
    moved.gaps = report.gaps.map { ExportReport.Gap(range: move($0.range), tracks: $0.tracks, reasons: $0.reasons) }
    moved.unprocessedRanges = report.unprocessedRanges.map(move)
    return moved
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
