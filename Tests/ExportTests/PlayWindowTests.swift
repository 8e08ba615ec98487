import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// `tipipe play --window` on a real display server (Xvfb): the window is captured from outside with
/// ffmpeg's `x11grab` and compared with the frame the play says is on screen, keys are typed with
/// `xdotool`. Every wait is for a line of the play (the script reacts to what it reads), under one
/// deadline.
@Suite("tipipe play --window on a display")
struct PlayWindowTests {
  /// Reacts to the play's lines: after the third time report, space (pause); once the paused frame is
  /// named, the window is captured and `.` typed (next frame), then `,` (back), `s` (snapshot), `+`
  /// (speed up) and `q`, each after the line that answers the one before.
  static let script = """
    set -u
    T="$1"; LIB="$2"; OUT="$3"; START="$4"; END="$5"
    coproc PLAY { "$T" play --endpoint "file://$LIB" --start "$START" --end "$END" --video-channel 0 --window \\
      --cache "$OUT/cache" \\
      2>"$OUT/play.err"; echo "{\\"exit\\":$?}"; }
    # The coprocess's descriptor is kept: bash forgets PLAY once it ends, before its last lines are read.
    exec 3<&"${PLAY[0]}"
    reports=0; paused=""; geometry=""; steps=0
    while IFS= read -r line <&3; do
      printf '%s\\n' "$line" >> "$OUT/play.jsonl"
      case "$line" in
        *'"event":"window"'*)
          geometry=$(printf '%s' "$line" | sed -E 's/.*"x":([0-9]+),"y":([0-9]+),"width":([0-9]+),"height":([0-9]+).*/\\3x\\4 \\1,\\2/');;
        *'"event":"time"'*)
          reports=$((reports + 1))
          if [ -z "$paused" ] && [ "$reports" -ge 3 ]; then paused=1; xdotool key space; fi;;
        *'"event":"paused"'*)
          set -- $geometry
          ffmpeg -v error -y -f x11grab -draw_mouse 0 -video_size "$1" -i "$DISPLAY+$2" -frames:v 1 "$OUT/window.png"
          xdotool key period;;
        *'"event":"step"'*)
          steps=$((steps + 1))
          if [ "$steps" -eq 1 ]; then xdotool key comma; else xdotool key s; fi;;
        *'"event":"snapshot"'*)
          xdotool key plus;;
        *'"event":"speed"'*)
          xdotool key q;;
      esac
    done
    """

  static func events(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
  }

  @Test(
    "the window shows the paused frame letterboxed (PSNR ≥ 30 dB against its snapshot), keys pause, speed up and quit")
  func windowShowsThePlay() throws {
    let library = try TemporaryDirectory()
    var options = smallOptions(seconds: 9)
    // Not recorded from 6 s to 7 s: the bar shows it before the play gets there (the listing).
    options.gaps = [(offset: 6, length: 1)]
    try LibrarySynthesizer(options: options).write(to: library.url)
    let out = try TemporaryDirectory()
    let script = out.url.appendingPathComponent("window.sh")
    try Data(Self.script.utf8).write(to: script)
    let tipipePath = try tipipeExecutable().path
    _ = try runForStandardError(
      "/usr/bin/timeout",
      [
        "120", "/usr/bin/xvfb-run", "-a", "-s", "-screen 0 1280x720x24", "/bin/bash", script.path, tipipePath,
        library.url.path, out.url.path, String(recordingStart), String(recordingStart + 9000),
      ])
    let lines = Self.events(
      (try? String(contentsOf: out.url.appendingPathComponent("play.jsonl"), encoding: .utf8)) ?? "")
    let errors = (try? String(contentsOf: out.url.appendingPathComponent("play.err"), encoding: .utf8)) ?? ""
    #expect(lines.last?["exit"] as? Int == 0, "\(lines.suffix(3)) \(errors)")
    let window = try #require(lines.first { $0["event"] as? String == "window" }, "\(lines.prefix(3))")
    #expect(window["width"] as? Int == 960 && window["height"] as? Int == 540)
    let paused = try #require(lines.first { $0["event"] as? String == "paused" }?["ms"] as? Int64, "\(lines)")
    #expect(lines.contains { $0["event"] as? String == "speed" && $0["speed"] as? String == "2" })
    let steps = lines.filter { $0["event"] as? String == "step" }.compactMap { $0["ms"] as? Int64 }
    #expect(steps == [paused + 40, paused], "one frame on, one back: \(steps) from \(paused)")
    let saved = try #require(lines.first { $0["event"] as? String == "snapshot" }, "\(lines)")
    #expect(saved["code"] as? Int == 0, "\(saved)")
    let file = try #require(saved["file"] as? String)
    let size = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", file])
    #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "320,240", "\(file): \(size)")
    #expect(lines.dropLast().last?["event"] as? String == "summary")

    // The frame the play names, as the SDK's snapshot makes it, against what the screen shows: the
    // 320x240 picture fills the 532 rows above the 8-row timeline bar and is 709 wide, centred, with
    // black bars either side.
    let reference = out.url.appendingPathComponent("reference.jpg")
    let snapshot = try tipipe([
      "snapshot", "--endpoint", "file://\(library.url.path)", "--at", String(paused), "--video-channel", "0",
      "--out", reference.path, "--cache", out.url.appendingPathComponent("cache").path,
    ])
    #expect(snapshot.status == 0, "\(snapshot.stderr)")
    let capture = out.url.appendingPathComponent("window.png")
    let measured = try runForStandardError(
      "/usr/bin/ffmpeg",
      [
        "-i", capture.path, "-i", reference.path, "-filter_complex",
        "[0:v]crop=709:532:125:0,scale=320:240:flags=area,format=gray[a];[1:v]format=gray[b];[a][b]psnr",
        "-f", "null", "-",
      ])
    let psnr = measured.range(of: "average:").map {
      Double(measured[$0.upperBound...].prefix { !$0.isWhitespace }) ?? 0
    }
    #expect((psnr ?? 0) >= 30, "PSNR \(String(describing: psnr)): \(measured.suffix(300))")
    let bars = try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-i", capture.path, "-vf", "crop=116:532:0:0,format=gray", "-f", "rawvideo", "-"])
    #expect(bars.count == 116 * 532 && bars.allSatisfy { $0 < 4 }, "the bars are black")
    // The timeline bar: dark grey for the range, the position early in it as a white mark.
    let timeline = try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-i", capture.path, "-vf", "crop=960:8:0:532,format=gray", "-f", "rawvideo", "-"])
    #expect(timeline.count == 960 * 8)
    let marks = (0..<960).filter { timeline[4 * 960 + $0] > 240 }
    #expect(!marks.isEmpty && marks.allSatisfy { $0 < 200 }, "the position's mark: columns \(marks)")
    #expect(timeline[4 * 960 + 900] > 30 && timeline[4 * 960 + 900] < 80, "the rest of the range is dark grey")
    // The unrecorded second, [6 s, 7 s) of 9 s: columns 640 to 746, red.
    let colours = try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-i", capture.path, "-vf", "crop=960:1:0:536,format=rgb24", "-f", "rawvideo", "-"])
    #expect(colours.count == 960 * 3)
    let red = (0..<960).filter { colours[3 * $0] > 150 && colours[3 * $0 + 1] < 80 && colours[3 * $0 + 2] < 80 }
    #expect(
      red.first.map { (638...642).contains($0) } == true && red.last.map { (744...748).contains($0) } == true,
      "red columns \(red.first ?? -1)...\(red.last ?? -1) (\(red.count))")
    #expect(red.count >= 100 && red.count <= 108, "\(red.count) red columns")
  }

  @Test("the audio channel plays on SDL's audio: the disk driver's samples are the decoded audio")
  func soundIsTheDecodedAudio() throws {
    let library = try TemporaryDirectory()
    var options = smallOptions(seconds: 3)
    options.gaps = []
    try LibrarySynthesizer(options: options).write(to: library.url)
    let out = try TemporaryDirectory()
    let played = out.url.appendingPathComponent("sdl.raw")
    let range = ["--start", String(recordingStart), "--end", String(recordingStart + 3000)]
    let tipipePath = try tipipeExecutable().path
    let lines = try run(
      "/usr/bin/env",
      [
        "SDL_AUDIODRIVER=disk", "SDL_DISKAUDIOFILE=\(played.path)", "/usr/bin/timeout", "120", "/usr/bin/xvfb-run",
        "-a", "-s", "-screen 0 1280x720x24", tipipePath, "play", "--endpoint", "file://\(library.url.path)",
        "--video-channel", "0", "--audio-channel", "1", "--window", "--cache",
        out.url.appendingPathComponent("cache").path,
      ] + range)
    let summary = try #require(Self.events(lines).last { $0["event"] as? String == "summary" }, "\(lines)")
    let frames = try #require(summary["audio_frames"] as? Int)
    #expect(frames >= 40, "\(summary)")
    // What SDL played: 32-bit float mono at 16 kHz, 1024 samples an AAC frame. Where a frame came after
    // the device needed it, SDL played silence (exact zeros, which a decoded tone never holds for long):
    // with the silence left out, the samples are the frames in order, whatever the machine's load.
    let device = try Data(contentsOf: played).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    let sound = device.filter { $0 != 0 }
    // Closing the device at the end drops what it still held: up to two of its 1024-sample buffers.
    #expect(sound.count >= frames * 1024 - 2048 && sound.count <= frames * 1024, "\(sound.count) samples")
    // The same seconds decoded by ffmpeg from an export of the library.
    let export = out.url.appendingPathComponent("reference.mp4")
    let exported = try tipipe(
      [
        "export", "--endpoint", "file://\(library.url.path)", "--video-channel", "0", "--audio-channel", "1", "--out",
        export.path, "--cache", out.url.appendingPathComponent("cache").path, "--quiet",
      ] + range)
    #expect(exported.status == 0, "\(exported.stderr)")
    let reference = try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-i", export.path, "-map", "0:a", "-f", "f32le", "-ac", "1", "-ar", "16000", "-"]
    ).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    // The best alignment within ±2 frames over the first 2 s: the normalized correlation of the two. The
    // library's tone is a 440 Hz sine, so where the sound starts is known only to within its period (36
    // samples); a lost or repeated frame shifts its phase and breaks the correlation.
    let window = 32_000
    try #require(sound.count > window + 2048 && reference.count > window + 2048)
    func correlation(_ lag: Int) -> Double {
      var (product, a, b) = (0.0, 0.0, 0.0)
      for index in 2048..<window {
        let x = Double(sound[index]), y = Double(reference[index + lag])
        (product, a, b) = (product + x * y, a + x * x, b + y * y)
      }
      return a > 0 && b > 0 ? product / (a * b).squareRoot() : 0
    }
    let best = (-2048...2048).max { correlation($0) < correlation($1) } ?? 0
    #expect(
      correlation(best) >= 0.95,
      "best lag \(best): \(correlation(best)); \(device.count - sound.count) samples of silence")
  }

  /// The file play's script: from 2 s, pause after three time lines, capture, seek 10 s on, quit once
  /// the position got there.
  static let fileScript = """
    set -u
    T="$1"; FILE="$2"; OUT="$3"
    coproc PLAY { "$T" play --input "$FILE" --window --window-size 640x368 --start 2 --cache "$OUT/cache" 2>"$OUT/play.err"; \\
      echo "{\\"exit\\":$?}"; }
    exec 3<&"${PLAY[0]}"
    reports=0; paused=""; geometry=""; target=""
    while IFS= read -r line <&3; do
      printf '%s\\n' "$line" >> "$OUT/play.jsonl"
      case "$line" in
        *'"event":"window"'*)
          geometry=$(printf '%s' "$line" | sed -E 's/.*"x":([0-9]+),"y":([0-9]+),"width":([0-9]+),"height":([0-9]+).*/\\3x\\4 \\1,\\2/');;
        *'"event":"time"'*)
          reports=$((reports + 1))
          ms=$(printf '%s' "$line" | sed -E 's/.*"ms":([0-9]+).*/\\1/')
          if [ -z "$paused" ] && [ "$reports" -ge 3 ]; then paused=1; xdotool key space; fi
          if [ -n "$target" ] && [ "$ms" -ge "$target" ]; then target=""; xdotool key q; fi;;
        *'"event":"paused"'*)
          ms=$(printf '%s' "$line" | sed -E 's/.*"ms":([0-9]+).*/\\1/')
          set -- $geometry
          ffmpeg -v error -y -f x11grab -draw_mouse 0 -video_size "$1" -i "$DISPLAY+$2" -frames:v 1 "$OUT/window.png"
          target=$((ms + 10000)); xdotool key Right;;
      esac
    done
    """

  @Test(
    "play --input FILE --window: from --start, the paused frame on screen is the file's as ffmpeg shows it (PSNR ≥ 30 dB, a turned file upright), → seeks 10 s",
    arguments: [false, true])
  func fileInAWindow(turned: Bool) throws {
    let out = try TemporaryDirectory()
    let file = out.url.appendingPathComponent("cam.mp4")
    let plain = turned ? out.url.appendingPathComponent("plain.mp4") : file
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=44100", "-t", "20", "-c:v", "libx264", "-g", "50", "-pix_fmt", "yuv420p",
        "-c:a", "aac", plain.path,
      ])
    if turned {
      // Shown upside down unless turned: the window must show what ffmpeg's autorotation shows.
      try turnedCopy(of: plain, degrees: 180, to: file)
    }
    let script = out.url.appendingPathComponent("file.sh")
    try Data(Self.fileScript.utf8).write(to: script)
    let tipipePath = try tipipeExecutable().path
    _ = try runForStandardError(
      "/usr/bin/env",
      [
        "SDL_AUDIODRIVER=disk", "SDL_DISKAUDIOFILE=\(out.url.appendingPathComponent("sound.raw").path)",
        "/usr/bin/timeout", "120", "/usr/bin/xvfb-run", "-a", "-s", "-screen 0 1280x720x24", "/bin/bash", script.path,
        tipipePath, file.path, out.url.path,
      ])
    let lines = Self.events(
      (try? String(contentsOf: out.url.appendingPathComponent("play.jsonl"), encoding: .utf8)) ?? "")
    let errors = (try? String(contentsOf: out.url.appendingPathComponent("play.err"), encoding: .utf8)) ?? ""
    #expect(lines.last?["exit"] as? Int == 0, "\(lines.suffix(3)) \(errors)")
    let times = lines.filter { $0["event"] as? String == "time" }.compactMap { $0["ms"] as? Int64 }
    #expect(times.first == 2000, "the play starts at --start: \(times.prefix(3))")
    let paused = try #require(lines.first { $0["event"] as? String == "paused" }?["ms"] as? Int64, "\(lines)")
    #expect(times.contains { $0 >= paused + 10_000 }, "→ moved the play 10 s on: \(times.suffix(3))")
    let summary = try #require(lines.last { $0["event"] as? String == "summary" })
    #expect((summary["audio_frames"] as? Int ?? 0) > 0, "\(summary)")

    // ffmpeg's picture at that time (an accurate seek), against the window: a 640x368 window holds the
    // 640x360 picture unscaled above the 8-row bar. Luma is compared: renderers upsample chroma each in
    // their own way (SDL's software renderer and ffmpeg differ by ~29 dB on testsrc2's sharp colour
    // edges while the pictures' luma agree to ~46 dB).
    let reference = out.url.appendingPathComponent("reference.png")
    _ = try run(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-y", "-ss", String(Double(paused) / 1000), "-i", file.path, "-frames:v", "1", reference.path])
    let measured = try runForStandardError(
      "/usr/bin/ffmpeg",
      [
        "-i", out.url.appendingPathComponent("window.png").path, "-i", reference.path, "-filter_complex",
        "[0:v]crop=640:360:0:0,format=gray[a];[1:v]format=gray[b];[a][b]psnr", "-f", "null", "-",
      ])
    let psnr = measured.range(of: "average:").map {
      Double(measured[$0.upperBound...].prefix { !$0.isWhitespace }) ?? 0
    }
    #expect((psnr ?? 0) >= 30, "PSNR \(String(describing: psnr)): \(measured.suffix(300))")
  }

  @Test(
    "play --input of sound alone reports its position from the sound; a --start at or past the end is a usage error"
  )
  func soundAloneAndAStartPastTheEnd() throws {
    let out = try TemporaryDirectory()
    let sound = out.url.appendingPathComponent("sound.m4a").path
    _ = try run(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:d=2", "-c:a", "aac", sound])
    let (lines, _) = try Self.playOnDisplay(sound, in: out)
    let events = Self.events(lines)
    let times = events.filter { $0["event"] as? String == "time" }.compactMap { $0["ms"] as? Int }
    // Every 100 ms of the 2 s, in order.
    #expect(times.count >= 15 && times == times.sorted() && (times.last ?? 0) >= 1800, "\(times)")
    #expect(events.last?["event"] as? String == "summary", "\(lines)")
    // Past the end: refused before any window opens (no display needed), as export --input refuses it.
    for start in ["2", "30"] {
      let refused = try tipipe(
        ["play", "--input", sound, "--window", "--start", start], environment: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
      #expect(refused.status == 2, "\(refused.stderr)")
      #expect(refused.stderr.hasPrefix("tipipe: --start is at or after the end of the file"), "\(refused.stderr)")
    }
  }

  /// The lines of `tipipe play --input FILE --window` on a virtual display (and its standard error), its
  /// sound written to a file in `out`.
  static func playOnDisplay(_ file: String, in out: TemporaryDirectory) throws -> (lines: String, errors: String) {
    let ended = try ChildProcess(
      "/usr/bin/env",
      [
        "SDL_AUDIODRIVER=disk", "SDL_DISKAUDIOFILE=\(out.url.appendingPathComponent("sdl.raw").path)",
        "/usr/bin/timeout", "120", "/usr/bin/xvfb-run", "-a", "-s", "-screen 0 1280x720x24",
        try tipipeExecutable().path, "play", "--input", file, "--window", "--cache",
        out.url.appendingPathComponent("cache").path,
      ]
    ).finish()
    return (String(decoding: ended.output, as: UTF8.self), String(decoding: ended.errors, as: UTF8.self))
  }

  @Test(
    "play --input of a file cut without re-encoding shows it from its cut: no picture its edit list hides, no time before 0"
  )
  func hiddenPicturesAreNotShown() throws {
    let out = try TemporaryDirectory()
    let source = out.url.appendingPathComponent("source.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-c:v", "libx264", "-preset",
        "ultrafast", "-bf", "3", "-g", "50", source,
      ])
    // Cut at 1.5 s inside the group from 0 s: 1.5 s of pictures kept for their references, hidden by the
    // edit list; 2.5 s (62 pictures) shown.
    let trimmed = out.url.appendingPathComponent("trimmed.mp4").path
    try cutWithoutReencoding(source, to: trimmed)
    let (lines, errors) = try Self.playOnDisplay(trimmed, in: out)
    #expect(errors.isEmpty, "\(errors)")
    let events = Self.events(lines)
    let times = events.filter { $0["event"] as? String == "time" }.compactMap { $0["ms"] as? Int }
    #expect(times.first == 0 && times == times.sorted() && (times.last ?? 0) >= 2300, "\(times)")
    let summary = try #require(events.last { $0["event"] as? String == "summary" }, "\(lines)")
    let frames = try #require(summary["video_frames"] as? Int, "\(summary)")
    #expect((55...63).contains(frames), "\(frames) pictures shown of the cut's 62")
  }

  @Test("play --input of a file whose picture starts 2 s after its sound: the time lines run from the sound, in order")
  func latePictureTimeLinesFollowTheSound() throws {
    let out = try TemporaryDirectory()
    let sound = out.url.appendingPathComponent("sound.m4a").path
    let picture = out.url.appendingPathComponent("picture.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:d=4", "-c:a", "aac", sound])
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2", "-c:v", "libx264", "-preset",
        "ultrafast", picture,
      ])
    let late = out.url.appendingPathComponent("late.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-i", sound, "-itsoffset", "2", "-i", picture, "-map", "1:v", "-map", "0:a", "-c", "copy",
        late,
      ])
    let (lines, errors) = try Self.playOnDisplay(late, in: out)
    let events = Self.events(lines)
    let times = events.filter { $0["event"] as? String == "time" }.compactMap { $0["ms"] as? Int }
    // From 300 ms into the sound, every 100 ms, through the picture's start to its end.
    #expect((times.first ?? .max) <= 500 && times == times.sorted(), "\(times) \(errors)")
    #expect(times.filter { $0 < 2_000 }.count >= 10 && (times.last ?? 0) >= 3_800, "\(times)")
    let summary = try #require(events.last { $0["event"] as? String == "summary" }, "\(lines)")
    #expect((summary["video_frames"] as? Int ?? 0) >= 45, "\(summary)")
  }

  @Test(
    "play --input of a file whose picture ends 2 s before its sound: the time lines run on from the sound, in order")
  func earlyPictureEndTimeLinesFollowTheSound() throws {
    let out = try TemporaryDirectory()
    let early = out.url.appendingPathComponent("early.mp4").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", early,
      ])
    let (lines, errors) = try Self.playOnDisplay(early, in: out)
    let events = Self.events(lines)
    let times = events.filter { $0["event"] as? String == "time" }.compactMap { $0["ms"] as? Int }
    // Every 100 ms through the picture, then on with the sound to its end (after 300 ms without a picture).
    #expect(times.first == 0 && times == times.sorted(), "\(times) \(errors)")
    #expect(times.filter { $0 > 2_300 }.count >= 10 && (times.last ?? 0) >= 3_800, "\(times)")
    let summary = try #require(events.last { $0["event"] as? String == "summary" }, "\(lines)")
    #expect((summary["video_frames"] as? Int ?? 0) >= 45, "\(summary)")
  }

  @Test("play --input of a file whose sound is MP3 shows its picture and says the sound is not read")
  func unreadSoundIsSaid() throws {
    let out = try TemporaryDirectory()
    let file = out.url.appendingPathComponent("mp3.mkv").path
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=1", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=48000:d=1", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libmp3lame",
        file,
      ])
    let (lines, errors) = try Self.playOnDisplay(file, in: out)
    #expect(errors.contains("warning: \(file): its sound (mp3) is not read: the play has none of it"), "\(errors)")
    let summary = try #require(Self.events(lines).last { $0["event"] as? String == "summary" }, "\(lines)")
    #expect((summary["video_frames"] as? Int ?? 0) >= 20 && summary["audio_frames"] as? Int == 0, "\(summary)")
  }

  @Test(
    "play --input's end is where the file's media ends: an MKV that starts at 10 s (its headers count from 0) and a piped FLV (its headers end at the last picture's start)"
  )
  func startPastTheEndOfOffsetFiles() throws {
    let out = try TemporaryDirectory()
    let source = try MediaFileExportTests.makeFile(
      .init(container: "mp4", codec: "h264", bFrames: false), seconds: 4, in: out.url)
    let offset = out.url.appendingPathComponent("offset.mkv").path
    _ = try run(
      "/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", source.path, "-c", "copy", "-output_ts_offset", "10", offset])
    let piped = out.url.appendingPathComponent("piped.flv")
    let flv = try runForData("/usr/bin/ffmpeg", ["-v", "error", "-i", source.path, "-c", "copy", "-f", "flv", "-"])
    try flv.write(to: piped)
    let noDisplay = ["DISPLAY": "", "WAYLAND_DISPLAY": ""]
    for file in [offset, piped.path] {
      // Inside the last picture: let through to the window (which cannot open here); past the end: refused.
      let inside = try tipipe(["play", "--input", file, "--window", "--start", "3.99"], environment: noDisplay)
      #expect(
        inside.status == 2 && inside.stderr.hasPrefix("tipipe: --window: cannot open"), "\(file): \(inside.stderr)")
      let past = try tipipe(["play", "--input", file, "--window", "--start", "4.1"], environment: noDisplay)
      #expect(
        past.status == 2 && past.stderr.hasPrefix("tipipe: --start is at or after the end"), "\(file): \(past.stderr)")
    }
  }

  @Test("without a display, --window is one error line and exit 2, before anything plays")
  func noDisplay() throws {
    let library = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: library.url)
    let result = try tipipe(
      [
        "play", "--endpoint", "file://\(library.url.path)", "--start", String(recordingStart), "--end",
        String(recordingStart + 3000), "--video-channel", "0", "--window",
      ], environment: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("tipipe: --window: cannot open a window"), "\(result.stderr)")
    #expect(result.stderr.split(separator: "\n").count == 1)
    #expect(result.stdout.isEmpty)
    #expect(try tipipe(["play", "--window-size", "640x360"]).status == 2)
    // A display but no sound: the same, for the audio.
    let tipipePath = try tipipeExecutable().path
    let silent = try runForStandardError(
      "/usr/bin/env",
      [
        "SDL_AUDIODRIVER=none-such", "/usr/bin/timeout", "60", "/usr/bin/xvfb-run", "-a", "/bin/bash", "-c",
        "\"$0\" \"$@\"; echo \"exit $?\" >&2", tipipePath, "play", "--endpoint", "file://\(library.url.path)",
        "--start", String(recordingStart), "--end", String(recordingStart + 3000), "--video-channel", "0",
        "--audio-channel", "1", "--window",
      ])
    #expect(silent.hasSuffix("exit 2\n"), "\(silent)")
    #expect(silent.hasPrefix("tipipe: --window: no sound"), "\(silent)")
  }
}
