import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// What a finished `tipipe` process left.
/// Every entry under `directory` with its kind, size and modification time: equal snapshots mean
/// nothing on disk changed.
func snapshot(_ directory: URL) throws -> [String: String] {
  var entries: [String: String] = [:]
  let enumerator = FileManager.default.enumerator(atPath: directory.path)
  while let name = enumerator?.nextObject() as? String {
    var status = stat()
    guard lstat(directory.appendingPathComponent(name).path, &status) == 0 else { continue }
    entries[name] = "\(status.st_mode) \(status.st_size) \(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
  }
  return entries
}

@Suite("Hostile inputs: typed errors, no crash, no hang, no data lost")
struct HostileInputTests {
  static let start = recordingStart
  static let end = recordingStart + 9000

  /// A 9-second library (three 3-second objects) in `directory/lib`.
  func library(in directory: URL, _ configure: (inout LibrarySynthesizer.Options) -> Void = { _ in }) throws -> URL {
    let library = directory.appendingPathComponent("lib")
    var options = smallOptions()
    configure(&options)
    try LibrarySynthesizer(options: options).write(to: library)
    return library
  }

  func exportArguments(_ library: URL, out: String, start: Int64 = start, end: Int64 = end) -> [String] {
    [
      "export", "--endpoint", "file://\(library.path)", "--start", String(start), "--end", String(end),
      "--video-channel", "0", "--audio-channel", "1", "--out", out,
    ]
  }

  // MARK: 1. Output paths

  @Test("--out naming a directory, '', the report's file or a FIFO is a usage error and nothing changes")
  func outputPathsThatMustNotBeReplaced() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    let work = directory.url.appendingPathComponent("work")
    let existing = work.appendingPathComponent("existing")
    try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
    try Data("keep me".utf8).write(to: existing.appendingPathComponent("precious.txt"))
    try Data("old export".utf8).write(to: work.appendingPathComponent("same.mp4"))
    #expect(mkfifo(work.appendingPathComponent("fifo").path, 0o644) == 0)
    try FileManager.default.createSymbolicLink(
      atPath: work.appendingPathComponent("link").path, withDestinationPath: existing.path)
    let before = try snapshot(directory.url)

    let cases: [[String]] = [
      ["--out", existing.path],
      ["--out", existing.path + "/"],
      ["--out", ""],
      ["--out", work.appendingPathComponent("link").path],
      ["--out", work.appendingPathComponent("fifo").path],
      [
        "--out", work.appendingPathComponent("same.mp4").path, "--report", work.appendingPathComponent("same.mp4").path,
      ],
      ["--out", work.appendingPathComponent("a.mp4").path, "--report", "./a.mp4"],
      ["--out", work.appendingPathComponent("b.mp4").path, "--report", existing.path],
      ["--out", work.appendingPathComponent("b.mp4").path, "--report", ""],
    ]
    for extra in cases {
      var arguments = exportArguments(library, out: "x")
      arguments.removeLast(2)
      let finished = try tipipe(arguments + extra, in: work)
      #expect(finished.status == 2, "\(extra): \(finished.stderr)")
      #expect(finished.reason == .exit)
      #expect(finished.stderr.split(separator: "\n").count == 1, "one line: \(finished.stderr)")
      #expect(try snapshot(directory.url) == before, "\(extra) changed the disk")
    }
    // A directory that does not exist: the file cannot be created (fileWriteFailed), nothing changes.
    var arguments = exportArguments(library, out: work.appendingPathComponent("missing/dir/c.mp4").path)
    arguments += ["--report", work.appendingPathComponent("missing/r.json").path]
    let missing = try tipipe(arguments, in: work)
    #expect(missing.status == 1)
    #expect(missing.stderr.hasPrefix("error: fileWriteFailed (6046)"), "\(missing.stderr)")
    #expect(try snapshot(directory.url) == before)
  }

  @Test("an existing regular file at --out is replaced only when the export succeeds")
  func replacesOnlyARegularFileOnSuccess() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    let out = directory.url.appendingPathComponent("out.mp4")
    try Data("old".utf8).write(to: out)
    // Nothing in the range: the export fails and the old file stays as it was.
    let failed = try tipipe(exportArguments(library, out: out.path, start: Self.end + 60_000, end: Self.end + 70_000))
    #expect(failed.status == 1)
    #expect(try Data(contentsOf: out) == Data("old".utf8))
    let succeeded = try tipipe(exportArguments(library, out: out.path) + ["--report", "-"])
    #expect(succeeded.status == 0, "\(succeeded.stderr)")
    #expect(try Probe(out).videoPackets.count == 225)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["lib", "out.mp4"])
  }

  // MARK: 2. Values at the limits of Int64

  @Test("times at the limits of Int64 are usage errors, from every door, and synth creates nothing")
  func extremeTimes() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    let out = directory.url.appendingPathComponent("x.mp4").path
    for (start, end) in [
      ("10000000000000000", "10000000000000001"), ("-9223372036854775808", "9223372036854775807"),
      ("9223372036854775806", "9223372036854775807"), ("0", "9223372036854775807"),
      ("99999999999999999999", "1"), ("+Inf", "1"), ("4611686018427387", "4611686018427388"),
    ] {
      var arguments = exportArguments(library, out: out)
      arguments[4] = start
      arguments[6] = end
      let finished = try tipipe(arguments)
      #expect(finished.status == 2, "\(start) \(end): \(finished.stderr)")
      #expect(finished.reason == .exit)
    }
    // The widest representable request is refused as too large, not trapped on.
    var widest = exportArguments(library, out: out)
    widest[4] = "-4611686018427387"
    widest[6] = "4611686018427387"
    let tooLarge = try tipipe(widest)
    #expect(tooLarge.status == 1)
    #expect(tooLarge.stderr.hasPrefix("error: rangeTooLarge (6117)"))

    for start in ["9223372036854775807", "-9223372036854775808", "4611686018427387"] {
      let target = directory.url.appendingPathComponent("synth-\(start)")
      let finished = try tipipe(["synth", "--out", target.path, "--start", start, "--duration", "2"])
      #expect(finished.status == 2, "\(start): \(finished.stderr)")
      #expect(!FileManager.default.fileExists(atPath: target.path), "nothing created for \(start)")
    }
    for gap in ["9223372036854775807:1", "1:9223372036854775807", "-1:1"] {
      let target = directory.url.appendingPathComponent("synth-gap")
      let finished = try tipipe(["synth", "--out", target.path, "--duration", "2", "--gap", gap])
      #expect(finished.status == 2, "\(gap): \(finished.stderr)")
      #expect(!FileManager.default.fileExists(atPath: target.path))
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
  }

  @Test("absurd sizes in index.json are mediaUnreadable gaps of their objects; absurd times a malformed index")
  func extremeIndexValues() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    try LibraryFaults.rewriteIndex(in: library) { segments in
      var segments = segments
      segments[0].size = Int.max
      segments[1].size = Int.max
      return segments
    }
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("a.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.gaps.map(\.range) == [reportRange(0, 6000)])
    #expect(result.report.gaps.first?.reasons == [.mediaUnreadable])
    #expect(result.report.coveredDurationMs == 3000)

    for (field, value) in [
      ("start_ms", "-9223372036854775808"), ("end_ms", "9223372036854775807"), ("start_ms", "4611686018427388"),
      ("size", "-1"), ("size", "1e300"), ("start_ms", "\"1\""),
    ] {
      let broken = directory.url.appendingPathComponent("broken-\(field)-\(value.count)")
      try FileManager.default.copyItem(at: library, to: broken)
      let indexURL = broken.appendingPathComponent("index.json")
      var text = try String(contentsOf: indexURL, encoding: .utf8)
      let pattern = try Regex("\"\(field)\" : -?[0-9]+")
      text = text.replacing(pattern, maxReplacements: 1) { _ in "\"\(field)\" : \(value)" }
      try text.write(to: indexURL, atomically: true, encoding: .utf8)
      let finished = try tipipe(exportArguments(broken, out: directory.url.appendingPathComponent("b.mp4").path))
      #expect(finished.status == 1, "\(field)=\(value)")
      #expect(finished.stderr.hasPrefix("error: cloudStorageUnavailable (6123): \(indexURL.path) is malformed"))
      if value != "1e300" {  // Foundation reports that one without a position
        #expect(finished.stderr.contains("segment"), "\(finished.stderr)")
      }
    }
  }

  @Test("a segment header with a valid CRC and times at the limits of Int64 is mediaUnreadable")
  func extremeHeaderTimes() throws {
    let cipher = try AES128CBC()
    for (start, end) in [
      (Int64.min, Int64.min + 1), (Int64.max - 1, Int64.max), (Int64.min, Int64.max),
      (4_611_686_018_427_388, 4_611_686_018_427_389),
    ] {
      let header = SegmentHeader(flags: 0, recordCount: 0, startMilliseconds: start, endMilliseconds: end, bodySize: 0)
      do {
        _ = try SegmentReader.parse(header.encoded, key: nil, cipher: cipher)
        Issue.record("accepted [\(start), \(end))")
      } catch let error as MediaError {
        #expect(error.gapReason == .mediaUnreadable)
      }
    }
  }

  @Test("an object spanning the whole representable time, frames at both ends, exports without a trap")
  func framesAtTheEndsOfTime() throws {
    let directory = try TemporaryDirectory()
    let source = try library(in: directory.url)
    let index = try RecordingIndex.decode(try Data(contentsOf: source.appendingPathComponent("index.json")))
    let records = try SegmentReader.parse(
      try Data(contentsOf: source.appendingPathComponent(index.segments[0].url)), key: nil, cipher: try AES128CBC()
    ).records
    var first = try #require(records.first { $0.track.kind == .video && $0.isKeyframe })
    var last = first
    let low = MediaTime.validMilliseconds.lowerBound
    let high = MediaTime.validMilliseconds.upperBound
    first.timestampMilliseconds = low
    last.timestampMilliseconds = high - 1
    let object = try SegmentWriter.object(
      records: [first, last], range: MediaRange(startMilliseconds: low, endMilliseconds: high))
    let library = directory.url.appendingPathComponent("wide")
    try FileManager.default.createDirectory(
      at: library.appendingPathComponent("objects"), withIntermediateDirectories: true)
    try object.write(to: library.appendingPathComponent("objects/wide.tseg"))
    try RecordingIndex(
      deviceId: "wide",
      segments: [
        .init(
          id: "wide", startMs: low, endMs: high, url: "objects/wide.tseg", size: object.count,
          sha256: SHA256Digest.hexHash(object), key: nil, tracks: [])
      ]
    ).encoded().write(to: library.appendingPathComponent("index.json"))
    for (from, to) in [(high - 7, high), (low, low + 7), (high - 864_000_000, high)] {
      let requested = MediaRange(startMilliseconds: from, endMilliseconds: to)
      let (result, _) = try export(
        library: library, range: requested, audio: false, to: directory.url.appendingPathComponent("w.mp4"))
      #expect(
        [.ok, .noRecordableMedia].contains(result.code), "[\(from), \(to)): \(result.code) \(result.message ?? "")")
      if let file = result.file {
        #expect(result.report.coveredDurationMs <= to - from)
        try FileManager.default.removeItem(at: file)
      }
    }
  }

  @Test("a keyframe whose parameter sets give no picture size is not a keyframe: noKeyFrame, not a failure")
  func keyframeWithoutPictureSize() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    try LibraryFaults.rewriteRecords(segment: 0, in: library) { records in
      var records = records
      let first = try #require(records.firstIndex { $0.track.kind == .video && $0.isKeyframe })
      // Start codes and NAL headers of nothing a parser can size.
      records[first].payload = Data([0, 0, 0, 1, 0x65] + [UInt8](repeating: 0x5A, count: 64))
      return records
    }
    let (result, _) = try export(
      library: library, range: range(0, 6000), to: directory.url.appendingPathComponent("k.mp4"))
    #expect(result.code == .ok, "\(result.code) \(result.message ?? "")")
    #expect(result.report.gaps.map(\.range) == [reportRange(0, 2000)])
    #expect(result.report.gaps.first?.reasons == [.noKeyFrame])
    #expect(result.report.coveredDurationMs == 4000)
    _ = try expectPlayable(result)
  }

  // MARK: 3. Duplicate and overlapping entries

  @Test("an index listing an object twice, or overlapping objects, exports every frame once")
  func duplicateAndOverlappingEntries() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    let duplicated = directory.url.appendingPathComponent("dup")
    try FileManager.default.copyItem(at: library, to: duplicated)
    try LibraryFaults.rewriteIndex(in: duplicated) { segments in
      [segments[0], segments[1], segments[1], segments[0], segments[2], segments[2]].sorted { $0.startMs < $1.startMs }
    }
    // An object re-cut to overlap its neighbours by a second on each side, listed with them.
    let overlapping = directory.url.appendingPathComponent("overlap")
    try FileManager.default.copyItem(at: library, to: overlapping)
    let cipher = try AES128CBC()
    let index = try RecordingIndex.decode(try Data(contentsOf: library.appendingPathComponent("index.json")))
    var records: [SegmentRecord] = []
    for segment in index.segments {
      records += try SegmentReader.parse(
        try Data(contentsOf: library.appendingPathComponent(segment.url)), key: nil, cipher: cipher
      ).records
    }
    let middle = MediaRange(startMilliseconds: Self.start + 2000, endMilliseconds: Self.start + 7000)
    // From the keyframe at 2 s: the GOPs are 2 s long.
    let object = try SegmentWriter.object(
      records: records.filter {
        $0.timestampMilliseconds >= middle.start.milliseconds && $0.timestampMilliseconds < middle.end.milliseconds
      },
      range: middle)
    try object.write(to: overlapping.appendingPathComponent("objects/middle.tseg"))
    try LibraryFaults.rewriteIndex(in: overlapping) { segments in
      var extra = segments[1]
      extra.id = "middle"
      extra.startMs = middle.start.milliseconds
      extra.endMs = middle.end.milliseconds
      extra.url = "objects/middle.tseg"
      extra.size = object.count
      extra.sha256 = SHA256Digest.hexHash(object)
      return [segments[0], extra, segments[1], segments[2]]
    }
    for (name, library) in [("duplicated", duplicated), ("overlapping", overlapping)] {
      let (result, _) = try export(
        library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("\(name).mp4"))
      #expect(result.code == .ok, "\(name): \(result.message ?? "")")
      #expect(result.report.complete, "\(name)")
      #expect(result.report.coveredDurationMs == 9000)
      let probe = try expectPlayable(result)
      #expect(probe.videoPackets.count == 225, "\(name): every frame once")
    }
  }

  // MARK: 4 and 5. Audio libav rejects, holes in G.711

  func g711Library(in directory: URL, channels: Int = 1) throws -> URL {
    try library(in: directory) { options in
      options.audioCodec = .g711a
      options.audioSampleRate = 8000
      options.audioChannels = channels
    }
  }

  @Test("a record libav cannot decode is an audio gap of its stretch; an empty G.711 record is skipped")
  func rejectedAudioRecords() throws {
    let directory = try TemporaryDirectory()
    let library = try g711Library(in: directory.url, channels: 2)
    // In object 1, one stereo record loses a byte (not a whole sample), and one record is emptied.
    var broken: SegmentRecord?
    try LibraryFaults.rewriteRecords(segment: 1, in: library) { records in
      var records = records
      let audio = records.indices.filter { records[$0].track.kind == .audio }
      records[audio[10]].payload = records[audio[10]].payload.dropLast()
      broken = records[audio[10]]
      records[audio[20]].payload = Data()
      return records
    }
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("a.mp4"))
    #expect(result.code == .ok, "\(result.message ?? "")")
    #expect(result.report.termination == .exhausted)
    #expect(result.report.coveredDurationMs == 9000)
    let brokenRecord = try #require(broken)
    let audioGaps = result.report.gaps.filter { $0.tracks == [ExportReport.Track(TrackID(.audio, channel: 1))] }
    #expect(
      audioGaps.contains { $0.reasons == [.mediaUnreadable] && $0.range.startMs == brokenRecord.timestampMilliseconds })
    #expect(result.report.gaps.allSatisfy { $0.tracks.count == 1 }, "no video gap: \(result.report.gaps)")
    _ = try expectPlayable(result)
  }

  @Test("an object whose G.711 records are all empty costs its own stretch of sound, not the sound after it")
  func emptyAudioRecordsFirst() throws {
    let directory = try TemporaryDirectory()
    let library = try g711Library(in: directory.url)
    // Every audio record of the first object (0–3 s) holds no byte.
    try LibraryFaults.rewriteRecords(segment: 0, in: library) { records in
      records.map { record in
        var record = record
        if record.track.kind == .audio { record.payload = Data() }
        return record
      }
    }
    let output = directory.url.appendingPathComponent("a.mp4")
    let (result, _) = try export(library: library, range: range(0, 9000), to: output)
    #expect(result.code == .ok && result.report.termination == .exhausted, "\(result.message ?? "")")
    #expect(result.report.coveredDurationMs == 9000)
    let probe = try expectPlayable(result)
    #expect(probe.audio?.codec_name == "aac")
    // The sound from 3 s on, transcoded (the encoder's first 128 ms frame starts a frame early, its
    // priming hidden by the edit list): about 6 s of it.
    let times = try audioPacketTimes(output)
    #expect((times.first ?? 0) >= 2.8 && (times.first ?? 0) <= 3.1, "\(times.prefix(3))")
    #expect((times.last ?? 0) >= 8.8, "\(times.suffix(3))")
    let audioGaps = result.report.gaps.filter { $0.tracks == [ExportReport.Track(TrackID(.audio, channel: 1))] }
    #expect(audioGaps.count == 1 && audioGaps.first?.range.startMs == recordingStart, "\(result.report.gaps)")
  }

  @Test("an AAC record relabelled G.711 is an audio gap, not the end of the export")
  func relabelledAudio() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url) { $0.audioChannels = 2 }
    try LibraryFaults.rewriteRecords(segment: 1, in: library) { records in
      var records = records
      // ADTS frames of any length, as stereo A-law: most have an odd byte count.
      for index in records.indices where records[index].track.kind == .audio && records[index].payload.count % 2 == 1 {
        records[index].codec = .g711a
        break
      }
      return records
    }
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("a.mp4"))
    #expect(result.code == .ok, "\(result.message ?? "")")
    #expect(result.report.termination == .exhausted)
    #expect(result.report.coveredDurationMs == 9000)
    #expect(result.report.gaps.contains { $0.reasons == [.mediaUnreadable] })
  }

  /// The times (s) of the audio packets ffprobe reads from `file`.
  func audioPacketTimes(_ file: URL) throws -> [Double] {
    try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path]
    ).split(separator: "\n").compactMap { Double($0) }
  }

  @Test("holes in G.711 audio inside an object keep the audio at its time: silence, and an audio gap in the report")
  func g711HolesKeepTheirPlace() throws {
    let directory = try TemporaryDirectory()
    let library = try g711Library(in: directory.url)
    // Object 1 is [3 s, 6 s): a 300 ms hole at 3.5 s (filled with silence), a 1.5 s hole at 4.2 s.
    var resume: Int64 = 0
    try LibraryFaults.rewriteRecords(segment: 1, in: library) { records in
      let kept = records.filter { record in
        guard record.track.kind == .audio else { return true }
        let offset = record.timestampMilliseconds - Self.start
        return !(3500..<3800).contains(offset) && !(4200..<5700).contains(offset)
      }
      resume =
        kept.first { $0.track.kind == .audio && $0.timestampMilliseconds >= Self.start + 5700 }!
        .timestampMilliseconds - Self.start
      return kept
    }
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("a.mp4"))
    #expect(result.code == .ok)
    let audioGaps = result.report.gaps.filter { $0.tracks == [ExportReport.Track(TrackID(.audio, channel: 1))] }
    #expect(audioGaps.count == 1, "\(result.report.gaps)")
    if let gap = audioGaps.first {
      // The gap starts where the audio before the hole ends (within one 128 ms AAC frame) and ends where the
      // audio resumes.
      #expect(abs(gap.range.startMs - (Self.start + 4200)) <= 130, "\(gap.range)")
      #expect(gap.range.endMs == Self.start + resume, "\(gap.range)")
      #expect(gap.reasons == [.trackUnavailable])
    }
    let file = try #require(result.file)
    let times = try audioPacketTimes(file)
    // The sound track is a run of whole frames (128 ms apart) throughout: the short hole is silence from
    // the transcoder, the long one AAC silence in the file (the report names it), so that players that
    // run on the sound stay in step after it.
    #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 0.128) < 0.002 }, "\(times)")
    // After the long hole the tone resumes at its time (the file starts at 0): its first frame within half
    // a frame (64 ms) of it, heard at most one frame later (an AAC frame after silence decodes with a
    // fade-in: the codec's overlap with the frame before).
    let pcm = try runForData(
      "/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-f", "s16le", "-ac", "1", "-ar", "8000", "-"])
    let onset = pcm.withUnsafeBytes { raw -> Double? in
      let samples = raw.bindMemory(to: Int16.self)
      return (Int(4.4 * 8000)..<samples.count).first { abs(Int(samples[$0])) > 1000 }.map { Double($0) / 8000 }
    }
    let resumed = try #require(onset, "no sound after the hole")
    let late = resumed - Double(resume) / 1000
    #expect(late >= -0.065 && late <= 0.065 + 0.128, "the tone resumes at \(resumed) s, not \(resume) ms")
    // The last audio packet ends with the video.
    #expect((try #require(times.last)) + 0.128 <= 9.0 + 0.13)
  }

  // MARK: 6. Non-regular files

  @Test("a FIFO or a directory where an object should be is a downloadFailed gap; a FIFO index an error")
  func nonRegularFiles() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url)
    let index = try RecordingIndex.decode(try Data(contentsOf: library.appendingPathComponent("index.json")))
    let fifo = library.appendingPathComponent(index.segments[1].url)
    try FileManager.default.removeItem(at: fifo)
    #expect(mkfifo(fifo.path, 0o644) == 0)
    let folder = library.appendingPathComponent(index.segments[2].url)
    try FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("a.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.gaps.map(\.range) == [reportRange(3000, 9000)])
    #expect(result.report.gaps.first?.reasons == [.downloadFailed])
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["a.mp4", "lib"])

    let indexURL = library.appendingPathComponent("index.json")
    try FileManager.default.removeItem(at: indexURL)
    #expect(mkfifo(indexURL.path, 0o644) == 0)
    let finished = try tipipe(exportArguments(library, out: directory.url.appendingPathComponent("b.mp4").path))
    #expect(finished.status == 1)
    #expect(finished.stderr.hasPrefix("error: cloudStorageUnavailable (6123): cannot read the index \(indexURL.path)"))
    #expect(finished.stderr.contains("FIFO"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["a.mp4", "lib"])
  }

  // MARK: 8. Messages

  @Test("every command answers --help and help COMMAND with exit 0")
  func help() throws {
    for command in ["demo", "synth", "export"] {
      for arguments in [[command, "--help"], ["help", command], [command, "-h"]] {
        let finished = try tipipe(arguments)
        #expect(finished.status == 0, "\(arguments)")
        #expect(finished.stdout.hasPrefix("usage: tipipe \(command)"), "\(arguments): \(finished.stdout)")
      }
    }
    let general = try tipipe(["help"])
    #expect(general.status == 0 && general.stdout.contains("export"))
    #expect(try tipipe(["help", "nonsense"]).status == 2)
    // Every command the general text lists is named whole: its own help answers to that name.
    let listed = general.stdout.components(separatedBy: "commands:\n").last?.split(separator: "\n\n").first
    let names = (listed ?? "").split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    #expect(names.count >= 15 && names.last == "help", "\(names)")
    for name in names where name != "help" {
      let finished = try tipipe([name, "--help"])
      #expect(finished.status == 0 && finished.stdout.hasPrefix("usage: tipipe \(name)"), "\(name): \(finished.stdout)")
    }
  }

  @Test("a failed export names its cause in one line, without keys; libav stays quiet")
  func messages() throws {
    let directory = try TemporaryDirectory()
    let library = try library(in: directory.url) { $0.encrypt = true }
    let index = try RecordingIndex.decode(try Data(contentsOf: library.appendingPathComponent("index.json")))
    let keys = index.segments.compactMap(\.key)
    // Every object damaged: nothing to export. The line says so; no key appears anywhere.
    for segment in 0..<3 { try LibraryFaults.replaceKey(segment: segment, in: library) }
    let finished = try tipipe(
      exportArguments(library, out: directory.url.appendingPathComponent("a.mp4").path) + ["--report", "-"])
    #expect(finished.status == 1)
    #expect(finished.stderr.split(separator: "\n").count == 1, "\(finished.stderr)")
    #expect(finished.stderr.hasPrefix("error: noRecordableMedia (6119): "))
    for key in keys { #expect(!finished.stderr.contains(key) && !finished.stdout.contains(key)) }

    let working = try tipipe(
      exportArguments(
        try self.library(in: directory.url.appendingPathComponent("plain")),
        out: directory.url.appendingPathComponent("b.mp4").path))
    #expect(working.status == 0)
    #expect(working.stderr.isEmpty, "not a terminal: nothing on stderr, libav included: \(working.stderr)")
  }
}
