import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@Suite("Export, judged by ffprobe")
struct ExportTests {
  @Test("a plain range starting between keyframes starts at the keyframe before it and is complete")
  func plainRange() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions()).write(to: directory.url.appendingPathComponent("lib"))
    let output = directory.url.appendingPathComponent("out.mp4")
    let (result, observations) = try export(
      library: directory.url.appendingPathComponent("lib"), range: range(2500, 7500), to: output)
    #expect(result.code == .ok)
    #expect(result.file == output)
    let report = result.report
    #expect(report.termination == .exhausted)
    #expect(report.complete)
    #expect(report.gaps.isEmpty && report.unprocessedRanges.isEmpty)
    #expect(report.requestedRange == reportRange(2500, 7500))
    #expect(report.segments.map(\.sourceRange) == [reportRange(2000, 7500)])
    #expect(report.coveredDurationMs == 5500)
    #expect(result.durationMs == 5500)
    _ = try expectPlayable(result)
    // Progress is monotonic and ends at 1.0.
    #expect(observations.progress == observations.progress.sorted())
    #expect(observations.progress.last == 1.0)
    #expect(observations.covered == observations.covered.sorted())
    // Nothing else is left in the output directory.
    let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
    #expect(left == ["lib", "out.mp4"])
  }

  @Test("sound that starts seconds after the picture is kept: its audio begins there, its absence before is a gap")
  func lateSound() throws {
    let directory = try TemporaryDirectory()
    // Channel 2's sound starts 4 s in (channel 1's from the start, not exported).
    var options = smallOptions(seconds: 12)
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 0, length: 4)]
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: options).write(to: library)
    let output = directory.url.appendingPathComponent("out.mp4")
    let (result, _) = try export(library: library, range: range(0, 12_000), to: output, audioChannel: 2)
    #expect(result.code == .ok && result.report.termination == .exhausted)
    #expect(result.report.coveredDurationMs == 12_000)
    let probe = try expectPlayable(result)
    #expect(probe.audio?.codec_name == "aac")
    // The sound from 4 s to the end: 8 s of AAC frames (16 kHz, 1024 samples each: 125).
    let frames = Int(probe.audio?.nb_read_frames ?? "") ?? 0
    #expect(abs(frames - 125) <= 2, "\(frames) AAC frames")
    // The only gap is the sound's absence before 4 s.
    let audioGaps = result.report.gaps.filter { $0.tracks.contains { $0.kind == "audio" } }
    // (It ends where the first AAC frame after 4 s starts: frames last 64 ms.)
    #expect(audioGaps.count == 1, "\(result.report.gaps)")
    #expect(audioGaps.first?.range.startMs == recordingStart)
    #expect(audioGaps.first.map { (4000..<4064).contains($0.range.endMs - recordingStart) } == true)
    #expect(!result.report.complete)
  }

  @Test("a hole before the sound's first packet: the file is made at the hole, the sound joins it when it begins")
  func soundAfterAHole() throws {
    let directory = try TemporaryDirectory()
    // A hole from 2 s to 4 s; channel 2's sound starts 6 s in.
    var options = smallOptions(seconds: 12)
    options.gaps = [(offset: 2, length: 2)]
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 0, length: 6)]
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: options).write(to: library)
    let (result, _) = try export(
      library: library, range: range(0, 12_000), to: directory.url.appendingPathComponent("out.mp4"), audioChannel: 2)
    #expect(result.code == .ok && result.report.coveredDurationMs == 10_000)
    let probe = try expectPlayable(result)
    #expect(probe.audio?.codec_name == "aac")
    // The sound from 6 s to the end: 6 s of 16 kHz AAC frames (1024 samples each: 94).
    let frames = Int(probe.audio?.nb_read_frames ?? "") ?? 0
    #expect(abs(frames - 94) <= 2, "\(frames) AAC frames")
    // The hole, of both tracks; the sound's absence on each side of it, of the sound alone.
    #expect(
      result.report.gaps.map(\.range.startMs) == [0, 2000, 4000].map { recordingStart + $0 }, "\(result.report.gaps)")
    let sound = result.report.gaps.filter { $0.tracks.map(\.kind) == ["audio"] }
    #expect(sound.count == 2 && sound.last.map { (6000..<6064).contains($0.range.endMs - recordingStart) } == true)
  }

  @Test(
    "30 and 12 fps (frame times rounded to whole ms): a whole library is complete, a hole is exactly its range, noRecording alone",
    arguments: [30, 12])
  func framesOfFractionalMilliseconds(_ fps: Int) throws {
    let directory = try TemporaryDirectory()
    var options = smallOptions(seconds: 20)
    options.fps = fps
    options.gop = fps
    options.segmentSeconds = 5
    let whole = directory.url.appendingPathComponent("whole")
    try LibrarySynthesizer(options: options).write(to: whole)
    let (complete, _) = try export(
      library: whole, range: range(0, 20_000), to: directory.url.appendingPathComponent("whole.mp4"))
    #expect(complete.code == .ok && complete.report.complete, "\(fps) fps: \(complete.report.gaps)")
    #expect(complete.report.coveredDurationMs == 20_000)
    #expect(Int(try expectPlayable(complete, fps: fps).video?.nb_read_frames ?? "") == 20 * fps)
    options.gaps = [(offset: 10, length: 5)]
    let holed = directory.url.appendingPathComponent("holed")
    try LibrarySynthesizer(options: options).write(to: holed)
    let (result, _) = try export(
      library: holed, range: range(0, 20_000), to: directory.url.appendingPathComponent("holed.mp4"))
    #expect(result.code == .ok && result.report.coveredDurationMs == 15_000, "\(fps) fps")
    #expect(result.report.gaps.map(\.range) == [reportRange(10_000, 15_000)], "\(fps) fps: \(result.report.gaps)")
    #expect(result.report.gaps.first?.reasons == [.noRecording])
    _ = try expectPlayable(result, fps: fps)
  }

  @Test("(a) a range starting exactly on a keyframe starts there, not a GOP earlier, and ends at its end")
  func startOnKeyframe() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions()).write(to: directory.url.appendingPathComponent("lib"))
    let (result, _) = try export(
      library: directory.url.appendingPathComponent("lib"), range: range(2000, 5000),
      to: directory.url.appendingPathComponent("k.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.segments.map(\.sourceRange) == [reportRange(2000, 5000)])
    #expect(result.report.complete)
    _ = try expectPlayable(result)
  }

  @Test("E23: every kind of gap: hole, missing, corrupted and keyframe-less stretches are cut out and reported")
  func everyKindOfGap() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions(seconds: 24)
    options.gaps = [(offset: 19, length: 2)]  // hole [19 s, 21 s)
    try LibrarySynthesizer(options: options).write(to: library)
    // Objects: [0,3) [3,6) [6,9) [9,12) [12,15) [15,18) [18,19) [21,24). Keyframes every 2 s from 0, and at 21.
    try LibraryFaults.removeObject(segment: 1, in: library)  // [3, 6) notFound; 6 s is a keyframe
    try LibraryFaults.corruptObject(segment: 3, in: library)  // [9, 12) integrityFailed; next keyframe 12 s
    try LibraryFaults.removeObject(segment: 4, in: library)  // [12, 15) notFound; [15, 16) noKeyFrame
    let output = directory.url.appendingPathComponent("gaps.mp4")
    let (result, observations) = try export(library: library, range: range(0, 24000), to: output)
    #expect(result.code == .ok)
    let report = result.report
    #expect(!report.complete)
    #expect(report.termination == .exhausted)
    let gaps = report.gaps.map { ($0.range, $0.reasons) }
    #expect(gaps.map(\.0) == [reportRange(3000, 6000), reportRange(9000, 16000), reportRange(19000, 21000)])
    #expect(gaps.map(\.1) == [[.notFound], [.integrityFailed, .notFound, .noKeyFrame], [.noRecording]])
    #expect(
      report.segments.map(\.sourceRange) == [
        reportRange(0, 3000), reportRange(6000, 9000), reportRange(16000, 19000), reportRange(21000, 24000),
      ])
    #expect(report.coveredDurationMs == 12000)
    let probe = try expectPlayable(result)
    #expect(observations.progress.last == 1.0)
    // A browser plays the spliced file to its end: every frame, none corrupted.
    let playback = try playInChromium(try #require(result.file))
    #expect(playback.ended && playback.corrupted == 0, "\(playback)")
    #expect(playback.frames == probe.videoPackets.count, "\(playback)")
  }

  @Test("E28: a codec and resolution change mid-range is an unsupportedMedia gap until a compatible keyframe")
  func codecChange() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions(seconds: 12)
    options.videoChanges = [
      .init(offsetSeconds: 4, codec: .h265, width: 160, height: 120),
      .init(offsetSeconds: 8, codec: .h264, width: 320, height: 240),
    ]
    try LibrarySynthesizer(options: options).write(to: library)
    let (result, _) = try export(
      library: library, range: range(0, 12000), to: directory.url.appendingPathComponent("c.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.gaps.map(\.range) == [reportRange(4000, 8000)])
    #expect(result.report.gaps.first?.reasons == [.unsupportedMedia])
    #expect(result.report.coveredDurationMs == 8000)
    _ = try expectPlayable(result)
  }

  @Test("(f) G.711 audio up to a format-change cut is kept: the cut is the only gap, the audio ends with the video")
  func g711BeforeFormatCut() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions(seconds: 9)
    options.audioCodec = .g711a
    options.audioSampleRate = 8000
    options.videoChanges = [.init(offsetSeconds: 6, codec: .h264, width: 160, height: 120)]
    try LibrarySynthesizer(options: options).write(to: library)
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("f.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.gaps.map(\.range) == [reportRange(6000, 9000)])
    #expect(result.report.gaps.first?.reasons == [.unsupportedMedia])
    #expect(result.report.gaps.first?.tracks.count == 2)
    #expect(result.report.coveredDurationMs == 6000)
    _ = try expectPlayable(result)
    // The audio track reaches the cut: it ends no earlier than one AAC frame (128 ms at 8 kHz) before the
    // video and no later than 20 ms after it.
    let lines = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "csv=p=0", try #require(result.file).path])
    let audio = try #require(lines.split(separator: "\n").first { $0.hasPrefix("audio") })
    let duration = try #require(Double(audio.split(separator: ",")[1]))
    #expect(duration >= 6.0 - 0.128 && duration <= 6.02, "audio lasts \(duration) s")
  }

  @Test("G.711 sound then AAC of another rate: the AAC stretch is a gap unsupportedMedia, the G.711 kept whole")
  func g711ThenAnotherAAC() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions(seconds: 12)
    options.segmentSeconds = 6
    try LibrarySynthesizer(options: options).write(to: library)
    // The first object's sound becomes G.711 A-law at 8 kHz (20 ms records); the second's stays AAC 16 kHz.
    try LibraryFaults.rewriteRecords(segment: 0, in: library) { records in
      let start = records.first?.timestampMilliseconds ?? 0
      let video = records.filter { $0.track.kind == .video }
      let sound = (0..<300).map { index in
        SegmentRecord(
          track: TrackID(.audio, channel: 1), codec: .g711a, isKeyframe: true, sampleRate: 8000, channels: 1,
          timestampMilliseconds: start + Int64(index) * 20, payload: Data(repeating: 0xD5, count: 160))
      }
      return (video + sound).sorted { $0.timestampMilliseconds < $1.timestampMilliseconds }
    }
    let (result, _) = try export(
      library: library, range: range(0, 12_000), to: directory.url.appendingPathComponent("mixed.mp4"))
    #expect(result.code == .ok && result.report.coveredDurationMs == 12_000)
    // The file's sound is the G.711 transcoded (8 kHz) up to 6 s; the AAC after it cannot join that track.
    let audioGaps = result.report.gaps.filter { $0.tracks.contains { $0.kind == "audio" } }
    #expect(audioGaps.count == 1, "\(result.report.gaps)")
    #expect(audioGaps.first?.reasons == [.unsupportedMedia], "\(result.report.gaps)")
    #expect(audioGaps.first.map { (6000...6200).contains($0.range.startMs - recordingStart) } == true)
    #expect(audioGaps.first?.range.endMs == recordingStart + 12_000)
    let probe = try expectPlayable(result)
    #expect(probe.audio?.sample_rate == "8000")
  }

  @Test("G.711 audio is transcoded to AAC")
  func g711() throws {
    for codec in [Codec.g711a, .g711u] {
      let directory = try TemporaryDirectory()
      let library = directory.url.appendingPathComponent("lib")
      var options = smallOptions(seconds: 6)
      options.audioCodec = codec
      options.audioSampleRate = 8000
      try LibrarySynthesizer(options: options).write(to: library)
      let (result, _) = try export(
        library: library, range: range(0, 6000), to: directory.url.appendingPathComponent("g.mp4"))
      #expect(result.code == .ok)
      let probe = try expectPlayable(result)
      #expect(probe.audio?.sample_rate == "8000")
      // 6 s of 8 kHz in 1024-sample AAC frames, less the encoder's delay at the start.
      #expect((44...47).contains(Int(probe.audio?.nb_read_frames ?? "") ?? 0), "\(probe.audio?.nb_read_frames ?? "-")")
    }
  }

  @Test("G.711 → AAC starts with the tone at full level: the encoder's priming is hidden by an edit list")
  func g711StartsWithoutPrimingSilence() throws {
    for reserved in [true, false] {
      let directory = try TemporaryDirectory()
      let library = directory.url.appendingPathComponent("lib")
      var options = smallOptions(seconds: 3)
      options.audioCodec = .g711u
      options.audioSampleRate = 8000
      try LibrarySynthesizer(options: options).write(to: library)
      let output = directory.url.appendingPathComponent("g.mp4")
      if reserved {
        let (result, _) = try export(library: library, range: range(0, 3000), to: output)
        #expect(result.code == .ok)
        _ = try expectPlayable(result)
      } else {
        // The remux fallback (an index larger than its room) keeps the lead-in hidden too.
        let executor = ThreadExecutor(name: "test.lead-in")
        defer { executor.shutdown() }
        let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
        let source = CloudSegmentSource(directory: library, range: range(0, 3000))
        let verifier = try SegmentVerifier()
        let demuxer = SegmentDemuxer()
        let transcoder = try AudioTranscoder()
        var configuration = Exporter.Configuration(
          range: range(0, 3000), videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1),
          workingPath: directory.url.appendingPathComponent("work.mp4").path)
        configuration.reservedIndexBytes = 16
        let exporter = Exporter(configuration: configuration)
        pipeline.connect(source, to: verifier)
        pipeline.connect(verifier, to: demuxer)
        pipeline.connect(demuxer, to: transcoder)
        pipeline.connect(transcoder, to: exporter)
        #expect(try pipeline.runToCompletion().failures.isEmpty)
        try exporter.finalizeFile(to: output.path)
        #expect(Array(try topLevelBoxTypes(output).prefix(2)) == ["ftyp", "moov"])
      }
      let start = try run(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=start_time", "-of", "csv=p=0", output.path])
      let samples = try decodedSamples(output)
      try #require(samples.count >= 3200, "reserved \(reserved): \(samples.count) samples decoded")
      func rms(_ range: Range<Int>) -> Double {
        let slice = samples[range]
        return (slice.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(slice.count)).squareRoot()
      }
      // 8 kHz: the first 10 ms against a stretch well inside.
      let head = rms(0..<80)
      let body = rms(1600..<3200)
      #expect(body > 1000, "a tone is there: \(body)")
      #expect(head > 0.8 * body, "reserved \(reserved): the first 10 ms at \(head), the tone at \(body)")
      #expect(start.trimmingCharacters(in: .whitespacesAndNewlines) == "0.000000", "reserved \(reserved): \(start)")
    }
  }

  @Test("encrypted segments export, and a wrong key is a decryptionFailed gap")
  func encrypted() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions()
    options.encrypt = true
    try LibrarySynthesizer(options: options).write(to: library)
    try LibraryFaults.replaceKey(segment: 2, in: library)
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("e.mp4"))
    #expect(result.code == .ok)
    #expect(result.report.gaps.map(\.range) == [reportRange(6000, 9000)])
    #expect(result.report.gaps.first?.reasons == [.decryptionFailed])
    _ = try expectPlayable(result)
  }

  @Test("E31: cancel at 50% leaves no file: cancelled (6115), termination cancelled, the report so far")
  func cancelHalfway() throws {
    for stop in [false, true] {
      let directory = try TemporaryDirectory()
      let library = directory.url.appendingPathComponent("lib")
      try LibrarySynthesizer(options: smallOptions(seconds: 30)).write(to: library)
      let output = directory.url.appendingPathComponent("x.mp4")
      let (result, _) = try export(library: library, range: range(0, 30000), to: output) { job, fraction in
        if fraction >= 0.5 { stop ? job.stop() : job.cancel() }
      }
      #expect(result.code == (stop ? .stopped : .cancelled))
      #expect(result.file == nil)
      #expect(result.report.termination == .cancelled)
      #expect(result.report.cause == (stop ? 6124 : 6115))
      #expect(!result.report.complete)
      #expect(!result.report.unprocessedRanges.isEmpty)
      #expect(result.report.coveredDurationMs >= 14000)
      let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
      #expect(left == ["lib"], "no file of the task is left")
    }
  }

  @Test("a video channel the recording does not have is trackUnavailable, and nothing to export")
  func missingVideoChannel() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library)
    let (result, _) = try export(
      library: library, range: range(-1000, 6000), to: directory.url.appendingPathComponent("v.mp4"), videoChannel: 5)
    #expect(result.code == .noRecordableMedia)
    #expect(result.file == nil)
    #expect(result.report.gaps.map(\.range) == [reportRange(-1000, 6000)])
    // Before the recording there is none; where objects were read, the channel is missing.
    #expect(Set(result.report.gaps.first?.reasons ?? []) == [.noRecording, .trackUnavailable])
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
  }

  @Test("an object without video of the channel is a video gap trackUnavailable, not a frame frozen over it")
  func objectWithoutVideo() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 9)).write(to: library)
    // The object [3 s, 6 s) keeps its audio and loses every video record.
    try LibraryFaults.rewriteRecords(segment: 1, in: library) { $0.filter { $0.track.kind == .audio } }
    let (result, _) = try export(
      library: library, range: range(0, 9000), to: directory.url.appendingPathComponent("o.mp4"))
    #expect(result.code == .ok)
    let report = result.report
    #expect(!report.complete)
    #expect(report.gaps.count == 1)
    #expect(report.gaps.first?.range == reportRange(3000, 6000))
    #expect(report.gaps.first?.reasons == [.trackUnavailable])
    #expect(report.gaps.first?.tracks.count == 2)
    // The frames of [3 s, 6 s) were lost with their object; decoding resumes at the keyframe at 6 s.
    #expect(report.segments.map(\.sourceRange) == [reportRange(0, 3000), reportRange(6000, 9000)])
    #expect(report.coveredDurationMs == 6000)
    _ = try expectPlayable(result)
  }

  @Test("an audio channel the recording does not have is an audio gap trackUnavailable: not complete")
  func missingAudioChannel() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 6)).write(to: library)
    let (result, _) = try export(
      library: library, range: range(0, 6000), to: directory.url.appendingPathComponent("a.mp4"), audioChannel: 7)
    #expect(result.code == .ok)
    #expect(!result.report.complete)
    #expect(result.report.coveredDurationMs == 6000)
    let audio = ExportReport.Track(TrackID(.audio, channel: 7))
    #expect(result.report.gaps.map(\.tracks) == [[audio]])
    #expect(result.report.gaps.map(\.range) == [reportRange(0, 6000)])
    #expect(result.report.gaps.first?.reasons == [.trackUnavailable])
    let probe = try expectPlayable(result, audio: false)
    #expect(probe.audio == nil)
  }

  @Test("a range without recordings is noRecordableMedia with no file")
  func nothingToExport() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: library)
    let (result, _) = try export(
      library: library, range: range(60000, 70000), to: directory.url.appendingPathComponent("n.mp4"))
    #expect(result.code == .noRecordableMedia)
    #expect(result.file == nil)
    #expect(result.report.termination == .failed)
    #expect(result.report.gaps.map(\.reasons) == [[.noRecording]])
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["lib"])
  }

  @Test("a long low-frame-rate export reserves index room for its samples, far less than its media")
  func indexRoomFollowsTheSampleRate() throws {
    let directory = try TemporaryDirectory()
    let library = directory.url.appendingPathComponent("lib")
    var options = smallOptions(seconds: 600)
    options.fps = 1
    options.gop = 10
    options.segmentSeconds = 60
    options.audioCodec = nil
    try LibrarySynthesizer(options: options).write(to: library)
    let (result, _) = try export(
      library: library, range: range(0, 600_000), audio: false, to: directory.url.appendingPathComponent("slow.mp4"))
    let file = try #require(result.file)
    #expect(result.report.coveredDurationMs == 600_000)
    let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
    let media = try mdatPayloadBytes(file)
    // 600 samples need about 10 KB of index, and the 600 one-second fragments left about 80 KB of zeroed
    // headers; the old rule (1.3 KB a second) reserved 840 KB on top.
    #expect(size - media < 250_000, "\(size - media) bytes of boxes for \(media) bytes of media")
    #expect(try Probe(file).videoPackets.count == 600)
  }
}

/// The bytes inside an MP4's `mdat` boxes.
func mdatPayloadBytes(_ file: URL) throws -> Int {
  try topLevelBoxes(file).filter { $0.type == "mdat" }.reduce(0) { $0 + $1.size - $1.headerSize }
}

/// The decoded audio of `file` as 16-bit mono samples, as ffmpeg decodes it (edit lists applied).
func decodedSamples(_ file: URL) throws -> [Int16] {
  let data = try runForData(
    "/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-map", "0:a", "-f", "s16le", "-ac", "1", "-"])
  return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}
