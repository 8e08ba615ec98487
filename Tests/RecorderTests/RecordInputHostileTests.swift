import Foundation
import MediaTestSupport
import Nodes
import Testing
import TrackRecording

/// `tipipe record --input` against what a hostile user (or a damaged disk) gives it: a file with damaged
/// packets is recorded to its end, as ffmpeg decodes it; a signal keeps what was recorded, reported,
/// picture and sound ending together.
@Suite struct RecordInputHostileTests {
  /// A `seconds` long H.264 (B-frames) + AAC file of `container` ("mp4" or "mpegts") and `size` at `path`.
  static func makeFile(_ path: String, container: String, seconds: Int = 10, size: String = "320x240") throws {
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=\(size):r=25:d=\(seconds)", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=48000:d=\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "3",
        "-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", container, path,
      ])
  }

  /// `late.mp4` in `directory`: `picture` seconds of picture and `sound` seconds of sound (each made by
  /// ``makeFile(_:container:seconds:size:)``), the `delayed` one starting `by` seconds after the other.
  static func lateFile(
    in directory: TemporaryDirectory, picture: Int, sound: Int, delayed: TrackKind, by seconds: Int, size: String
  ) throws -> String {
    let pictureFile = directory.url.appendingPathComponent("picture.mp4").path
    let soundFile = directory.url.appendingPathComponent("sound.mp4").path
    try makeFile(pictureFile, container: "mp4", seconds: picture, size: size)
    try makeFile(soundFile, container: "mp4", seconds: sound, size: size)
    let late = directory.url.appendingPathComponent("late.mp4").path
    let (first, second) = delayed == .audio ? (pictureFile, soundFile) : (soundFile, pictureFile)
    let maps = delayed == .audio ? ["-map", "0:v", "-map", "1:a"] : ["-map", "1:v", "-map", "0:a"]
    _ = try run(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-y", "-i", first, "-itsoffset", "\(seconds)", "-i", second] + maps + ["-c", "copy", late])
    return late
  }

  @Test(
    "a file with damaged packets (bad bytes in its sound or its pictures, a truncated last packet) is recorded to its end: the damaged packets are skipped, as ffmpeg skips them",
    arguments: ["damaged", "damaged-picture", "truncated"])
  func damagedPacketsAreSkipped(kind: String) throws {
    let directory = try TemporaryDirectory("record-damaged")
    let source = directory.url.appendingPathComponent("source").path
    let damaged = kind.hasPrefix("damaged")
    try Self.makeFile(source, container: damaged ? "mp4" : "mpegts")
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
    if damaged {
      // Five sound packets (or pictures, whose NAL unit lengths then make no sense) a third of the way in
      // overwritten with noise, where ffprobe says they lie.
      let stream = kind == "damaged" ? "a" : "v"
      let packets = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pos,size", "-of", "csv=p=0", source]
      ).split(separator: "\n").compactMap { line -> (size: Int, position: Int)? in
        let fields = line.split(separator: ",").compactMap { Int($0) }
        return fields.count == 2 ? (fields[0], fields[1]) : nil
      }
      try #require(packets.count > 200)
      var state: UInt64 = 2
      for packet in packets[150..<155] {
        for index in packet.position..<packet.position + packet.size {
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
      }
    } else {
      // Cut in the middle of a TS packet, 40 % of the way in.
      bytes = Array(bytes.prefix(bytes.count * 2 / 5 + 101))
    }
    let input = directory.url.appendingPathComponent("\(kind).\(damaged ? "mp4" : "ts")")
    try Data(bytes).write(to: input)
    // The judge: how far ffmpeg decodes the same file.
    let decoded = try Double(
      run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", input.path]
      ).trimmingCharacters(in: .whitespacesAndNewlines))
    let length = try #require(decoded)
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", input.path, "--name", kind, "--fps", "25", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    #expect(done.stdout.contains("\"file\":"), "\(done.stdout)")
    // Said on standard error: the skipped packets' frames are missing (the cut TS's last packet is only
    // short: it is dropped when read).
    if damaged {
      #expect(done.stderr.hasPrefix("warning: ") && done.stderr.contains("damaged packets were"), "\(done.stderr)")
    }
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/\(kind).mp4"))
    // Both tracks run (nearly) to the file's end: a frame or two of the last packets may be lost.
    #expect(streams.count == 2, "\(streams)")
    for stream in streams { #expect((stream.duration ?? 0) > length - 0.7, "\(streams) of \(length) s") }
  }

  @Test(
    "SIGTERM in the middle of a recording keeps what was recorded: reported, then the cancelled line; picture and sound end together"
  )
  func aSignalKeepsTheRecording() throws {
    let directory = try TemporaryDirectory("record-signal")
    let source = directory.url.appendingPathComponent("long.mp4").path
    // Pictures big enough that the decoder has packets waiting when the signal comes.
    try Self.makeFile(source, container: "mp4", seconds: 120, size: "640x360")
    let root = directory.url.appendingPathComponent("root").path
    let file = root + "/Recordings/cut.mp4"
    let process = try tipipeChild(["record", "--input", source, "--name", "cut", "--fps", "25", "--data-root", root])
    // Seconds of fragments are written (one a second of media) before the signal: the decoder has fallen
    // behind the reading by then (what waited for it was lost, a second of picture, before the fix).
    try waitUntil("the recording's first fragments") {
      ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 1_000_000
    }
    process.signal(SIGTERM)
    let ended = Finished(try process.finish())
    #expect(ended.status == 1)
    #expect(ended.stderr == "error: cancelled (6115): interrupted by SIGTERM\n", "\(ended.stderr)")
    let line = try #require(
      try JSONSerialization.jsonObject(with: Data(ended.stdout.utf8)) as? [String: Any], "\(ended.stdout)")
    #expect(line["file"] as? String == file)
    let reported = try #require(line["duration_ms"] as? Int)
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: file))
    let video = try #require(streams.first?.duration)
    let audio = try #require(streams.last?.duration)
    #expect(video > 1 && video < 119, "\(streams)")
    // Each track as far as the file's order took it: within the file's interleaving (ffmpeg's MP4 chunks
    // of up to half a second), not seconds apart as when what waited for the decoders was dropped.
    #expect(abs(video - audio) < 0.5, "\(streams)")
    #expect(abs(Double(reported) / 1000 - max(video, audio)) < 0.1, "\(reported) ms, \(streams)")
    #expect(try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"]).isEmpty)
  }

  @Test(
    "record --grid of files one of whose sound starts 20 s after its picture completes: the late sound is waited for seconds, not forever"
  )
  func aGridWithLateSoundCompletes() throws {
    let directory = try TemporaryDirectory("record-grid-late")
    let early = directory.url.appendingPathComponent("early.mp4").path
    try Self.makeFile(early, container: "mp4", seconds: 40)
    // The same picture, its sound from 20 s on: its reading, held back with its picture while the mixers
    // wait for that sound, locked both compositors when every input was waited for however long (helper-50).
    let late = directory.url.appendingPathComponent("late.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-i", early, "-itsoffset", "20", "-i", early, "-map", "0:v", "-map", "1:a", "-t", "40",
        "-c", "copy", late,
      ])
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe([
      "record", "--grid", "--input", early, "--input", late, "--name", "grid", "--fps", "10", "--size", "160x120",
      "--data-root", root,
    ])
    #expect(done.status == 0, "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/grid.mp4"))
    #expect(streams.count == 2 && streams.allSatisfy { abs(($0.duration ?? 0) - 40) < 0.5 }, "\(streams)")
  }

  @Test(
    "sound at 44.1, 88.2 and 96 kHz is recorded whole: no frame left out where rounded frame times overlapped by a microsecond",
    arguments: [44_100, 88_200, 96_000])
  func soundAtEveryRateIsWhole(rate: Int) throws {
    let directory = try TemporaryDirectory("record-rates")
    let input = directory.url.appendingPathComponent("in.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=6", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=\(rate):d=6", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a",
        "aac", input,
      ])
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", input, "--name", "rate", "--fps", "25", "--data-root", root])
    #expect(done.status == 0 && done.stderr.isEmpty, "\(done.stderr)")
    let output = root + "/Recordings/rate.mp4"
    let audio = try #require(try RecorderFixtures.streams(of: URL(fileURLWithPath: output)).first { $0.codec == "aac" })
    let recordedRate = try #require(audio.sampleRate)
    // The packets, one AAC frame apart each, without a jump (a frame left out is a jump of two).
    let times = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time", "-of", "csv=p=0", output]
    ).split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    let frame = 1024 / Double(recordedRate)
    let jumps = zip(times, times.dropFirst()).filter { $1 - $0 > frame * 1.5 }
    #expect(jumps.isEmpty, "\(jumps.count) jumps at \(recordedRate) Hz: \(jumps.prefix(3))")
    // As many frames as 6 s of sound holds (give or take the edges).
    #expect(abs(Double(times.count) - 6 / frame) <= 3, "\(times.count) frames of \(frame) s")
  }

  @Test("record --input says which of a file's tracks it does not read (MP3 sound, VP9 picture) and records the rest")
  func unreadTracksAreSaid() throws {
    let directory = try TemporaryDirectory("record-unread")
    let input = directory.url.appendingPathComponent("mp3.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=3", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=44100:d=3", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libmp3lame",
        input,
      ])
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", input, "--name", "mp3", "--fps", "25", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    #expect(
      done.stderr == "warning: \(input): its sound (mp3) is not read: the recording has none of it\n", "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/mp3.mp4"))
    #expect(streams.map(\.codec) == ["h264"], "\(streams)")
    let quiet = try tipipe([
      "record", "--input", input, "--name", "quiet", "--fps", "25", "--data-root", root, "--quiet",
    ])
    #expect(quiet.status == 0 && quiet.stderr.isEmpty, "--quiet: \(quiet.stderr)")
    // Nothing of the file read: a typed error, no recording.
    let webm = directory.url.appendingPathComponent("vp9.webm").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=1", "-f", "lavfi", "-i",
        "sine=d=1", "-c:v", "libvpx-vp9", "-deadline", "realtime", "-c:a", "libopus", webm,
      ])
    let refused = try tipipe(["record", "--input", webm, "--name", "vp9", "--data-root", root])
    #expect(refused.status == 1)
    #expect(
      refused.stderr.hasPrefix("error: ") && refused.stderr.contains("(its streams: vp9, opus)"),
      "\(refused.stderr)")
    #expect(!FileManager.default.fileExists(atPath: root + "/Recordings/vp9.mp4"))
    // Only its sound asked for, in a codec not read (H.264 with Opus, --no-video): said as such.
    let opus = directory.url.appendingPathComponent("opus.mkv").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=1", "-f", "lavfi", "-i", "sine=d=1",
        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libopus", opus,
      ])
    let soundOnly = try tipipe(["record", "--input", opus, "--name", "opus", "--no-video", "--data-root", root])
    #expect(soundOnly.status == 1)
    #expect(
      soundOnly.stderr == "error: unsupportedFormat (6113): \(opus): its sound (opus), not read\n",
      "\(soundOnly.stderr)")
    #expect(!FileManager.default.fileExists(atPath: root + "/Recordings/opus.mp4"))
  }

  @Test(
    "a file whose sound starts 2, 9 or 40 s after its picture is recorded with its sound that far in, not moved to the start nor left out",
    arguments: [2, 9, 40])
  func lateSoundKeepsItsPlace(lead: Int) throws {
    let directory = try TemporaryDirectory("record-late-sound")
    let late = try Self.lateFile(
      in: directory, picture: lead + 6, sound: 8, delayed: .audio, by: lead, size: "160x120")
    let starts = { (path: String) throws -> [Double] in
      try run(
        "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=start_time", "-of", "csv=p=0", path]
      ).split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }
    let given = try starts(late)
    try #require(given.count == 2)
    let root = directory.url.appendingPathComponent("root").path
    // Few small pictures: the recorder's picture runs far ahead of a sound that many seconds into the file.
    let done = try tipipe(
      ["record", "--input", late, "--name", "late", "--fps", "5", "--size", "160x120", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    #expect(!done.stderr.contains("warning"), "\(done.stderr)")
    let output = root + "/Recordings/late.mp4"
    let recorded = try starts(output)
    try #require(recorded.count == 2, "\(recorded)")
    // Both tracks from the start, the sound silent until its own start; its packets to the file's end.
    #expect(recorded.allSatisfy { abs($0) < 0.001 }, "\(recorded)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: output))
    #expect(streams.count == 2 && abs((streams[1].duration ?? 0) - Double(lead + 8)) < 0.1, "\(streams)")
    // The tone begins as far in as in the file (the first loud second of the decoded sound).
    let samples = try runForData(
      "/usr/bin/ffmpeg", ["-v", "error", "-i", output, "-map", "0:a", "-ac", "1", "-ar", "8000", "-f", "s16le", "-"])
    let loud = samples.withUnsafeBytes { raw in
      raw.bindMemory(to: Int16.self).firstIndex { abs(Int($0)) > 3000 }
    }
    let toneStart = Double(try #require(loud)) / 8000
    #expect(abs(toneStart - (given[1] - given[0])) < 0.03, "the tone starts at \(toneStart) s, given \(given)")
  }

  @Test(
    "a sound starting more than 2 minutes after the picture is not waited for: the recording has the picture, and says it has no sound"
  )
  func soundTooLateIsSaid() throws {
    let directory = try TemporaryDirectory("record-too-late-sound")
    let wait = Int(FragmentedMP4Writer.fileTrackWait.microseconds / 1_000_000)
    let late = try Self.lateFile(
      in: directory, picture: wait + 6, sound: 2, delayed: .audio, by: wait + 2, size: "64x64")
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(
      ["record", "--input", late, "--name", "late", "--fps", "1", "--size", "160x120", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    #expect(done.stderr.contains("warning: the recording has no sound"), "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/late.mp4"))
    #expect(streams.map(\.codec) == ["h264"], "\(streams)")
  }

  @Test(
    "a file cut without re-encoding is recorded from its cut: the pictures its edit list hides are decoded, not recorded"
  )
  func hiddenPicturesAreNotRecorded() throws {
    let directory = try TemporaryDirectory("record-edit-list")
    let source = directory.url.appendingPathComponent("source.mp4").path
    try Self.makeFile(source, container: "mp4", seconds: 8)
    // Cut at 1.5 s, inside the group of pictures from 0 s: the file keeps 0–1.5 s for their references and
    // its edit list hides them (libavformat: negative times, flagged to discard).
    let trimmed = directory.url.appendingPathComponent("trimmed.mp4")
    try cutWithoutReencoding(source, to: trimmed.path)
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(
      ["record", "--input", trimmed.path, "--name", "cut", "--fps", "25", "--size", "320x240", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    let output = URL(fileURLWithPath: root + "/Recordings/cut.mp4")
    let streams = try RecorderFixtures.streams(of: output)
    // 6.5 s as players show it (8 s with the hidden pictures).
    #expect(streams.first.map { abs(($0.duration ?? 0) - 6.5) < 0.1 } == true, "\(streams)")
    let first = try RecorderFixtures.luma(of: output, picture: 0)
    let shown = try RecorderFixtures.luma(of: trimmed, picture: 0)
    let hidden = try RecorderFixtures.luma(of: URL(fileURLWithPath: source), picture: 0)
    try #require(first.count == 320 * 240 && shown.count == first.count && hidden.count == first.count)
    #expect(RecorderFixtures.psnr(first, shown) > 30, "the first picture is not the cut's")
    #expect(RecorderFixtures.psnr(first, hidden) < 25, "the first picture is a hidden one")
  }

  @Test(
    "a file's tracks carry no picture its edit list hides: as many pictures as ffmpeg decodes, none before the start"
  )
  func fileTracksCarryNoHiddenPicture() throws {
    let directory = try TemporaryDirectory("tracks-edit-list")
    let source = directory.url.appendingPathComponent("source.mp4").path
    try Self.makeFile(source, container: "mp4", seconds: 4)
    let trimmed = directory.url.appendingPathComponent("trimmed.mp4").path
    try cutWithoutReencoding(source, to: trimmed)
    let decoded = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "v", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of",
        "csv=p=0", trimmed,
      ]
    ).trimmingCharacters(in: .whitespacesAndNewlines)
    let tracks = try FileTracks(path: trimmed, audio: false)
    let video = try #require(tracks.video)
    let queued = DispatchSemaphore(value: 0)
    let subscription = video.subscribe(capacity: 1_000) { queued.signal() }
    try tracks.start()
    var times: [Int64] = []
    var ended = false
    while !ended, queued.wait(timeout: .now() + 60) == .success {
      let taken = subscription.take(upTo: 1_000)
      times += taken.frames.map(\.time.microseconds)
      ended = taken.ended
    }
    #expect(ended, "the track did not end")
    #expect(String(times.count) == decoded, "\(times.count) pictures, ffmpeg decodes \(decoded)")
    #expect(times.first == tracks.mediaStart.microseconds, "\(times.prefix(3)) from \(tracks.mediaStart)")
    // Its video's range starts where its first picture is shown, not at the hidden keyframe.
    #expect(try MediaFileSource.probe(path: trimmed).video?.range.start == tracks.mediaStart)
  }

  @Test(
    "a picture starting 12 s after the sound (more than the 10 s hole a live picture is held over): its first picture is held from the start, the rest in place"
  )
  func latePictureKeepsItsPlace() throws {
    let directory = try TemporaryDirectory("record-late-picture")
    let late = try Self.lateFile(
      in: directory, picture: 4, sound: 16, delayed: .video, by: 12, size: "160x120")
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(
      ["record", "--input", late, "--name", "late", "--fps", "25", "--size", "160x120", "--data-root", root])
    #expect(done.status == 0 && done.stderr.isEmpty, "\(done.stderr)")
    let output = URL(fileURLWithPath: root + "/Recordings/late.mp4")
    let streams = try RecorderFixtures.streams(of: output)
    #expect(streams.count == 2 && abs((streams[0].duration ?? 0) - 16) < 0.1, "\(streams)")
    // Held before it comes: the picture at 5 s is the file's first; 1.5 s after it comes, its own 1.5 s.
    let picture = directory.url.appendingPathComponent("picture.mp4")
    let first = try RecorderFixtures.scaledLuma(of: picture, at: 0, width: 160, height: 120)
    let held = try RecorderFixtures.scaledLuma(of: output, at: 5, width: 160, height: 120)
    #expect(RecorderFixtures.psnr(held, first) > 30, "the picture at 5 s is not the first one held")
    let given = try RecorderFixtures.scaledLuma(of: picture, at: 1.5, width: 160, height: 120)
    let recorded = try RecorderFixtures.scaledLuma(of: output, at: 13.5, width: 160, height: 120)
    #expect(RecorderFixtures.psnr(recorded, given) > 30, "the picture at 13.5 s is not the file's at 13.5 s")
  }

  @Test(
    "a track recorded alone starts the recording where it starts: --no-video of a sound 30 s in is 8 s long, as reported"
  )
  func aTrackAloneStartsTheRecording() throws {
    let directory = try TemporaryDirectory("record-alone")
    let late = try Self.lateFile(
      in: directory, picture: 40, sound: 8, delayed: .audio, by: 30, size: "64x64")
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", late, "--name", "alone", "--no-video", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    let reported = try #require(
      (try JSONSerialization.jsonObject(with: Data(done.stdout.utf8)) as? [String: Any])?["duration_ms"] as? Int)
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/alone.mp4"))
    let duration = try #require(streams.first?.duration, "\(streams)")
    #expect(abs(duration - 8) < 0.1 && abs(Double(reported) / 1000 - duration) < 0.05, "\(reported) ms, \(streams)")
  }

  @Test(
    "the sound packet a cut leaves partly shown is kept, as players play its end: probe counts ffmpeg's sound frames, and a recording of the sound alone lasts as long"
  )
  func partlyShownSoundIsKept() throws {
    let directory = try TemporaryDirectory("record-cut-sound")
    let source = directory.url.appendingPathComponent("source.mp4").path
    try Self.makeFile(source, container: "mp4", seconds: 8, size: "64x64")
    let trimmed = directory.url.appendingPathComponent("trimmed.mp4").path
    try cutWithoutReencoding(source, to: trimmed)
    let fields = try run(
      "/usr/bin/ffprobe",
      [
        "-v", "error", "-select_streams", "a", "-count_frames", "-show_entries", "stream=nb_read_frames,duration",
        "-of", "csv=p=0", trimmed,
      ]
    ).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
    let (length, frames) = (try #require(Double(fields.first ?? "")), try #require(Int(fields.last ?? "")))
    let info = try MediaFileSource.probe(path: trimmed)
    #expect(info.audio?.packets == frames, "\(String(describing: info.audio))")
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(["record", "--input", trimmed, "--name", "sound", "--no-video", "--data-root", root])
    #expect(done.status == 0, "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/sound.mp4"))
    let recorded = try #require(streams.first?.duration, "\(streams)")
    // Its whole sound from the cut, and the encoder's last frame filled up (at most 21 ms at 48 kHz).
    #expect(recorded >= length - 0.002 && recorded < length + 0.022, "\(recorded) s of \(length) s")
  }

  @Test(
    "a file whose picture is one still (a cover over its sound) is recorded with both: the still held over the sound")
  func oneStillAndItsSound() throws {
    let directory = try TemporaryDirectory("record-still")
    let still = directory.url.appendingPathComponent("still.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=0.04", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000:d=3", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", still,
      ])
    let root = directory.url.appendingPathComponent("root").path
    let done = try tipipe(
      ["record", "--input", still, "--name", "still", "--fps", "10", "--size", "160x120", "--data-root", root])
    #expect(done.status == 0 && done.stderr.isEmpty, "\(done.stderr)")
    let streams = try RecorderFixtures.streams(of: URL(fileURLWithPath: root + "/Recordings/still.mp4"))
    #expect(streams.map(\.codec) == ["h264", "aac"], "\(streams)")
  }
}
