import Foundation
import MediaSynthesis
import MediaTestSupport
import Synchronization
import Testing

/// Picture and sound of `tipipe play --window` measured from outside, on one clock (the system's real
/// time): a beacon library (a white flash and a 1 kHz beep at each second) is played on Xvfb, the
/// window's centre captured 100 times a second by ffmpeg's `x11grab` (each capture stamped with the
/// time it was taken), and SDL's `disk` audio driver writes what it plays into a FIFO read here, each
/// read stamped as it arrives. The beep heard minus the flash shown is the play's A/V offset; the
/// file's own (an export decoded by ffmpeg) is taken off.
@Suite("lip sync of tipipe play --window, measured outside")
struct LipSyncTests {
  /// Plays from the start; after 4.5 s of media, space (pause); 1 s later space (resume); 4 s after
  /// that → (10 s on); 4 s later q. The capture starts with the window. Each key's time is logged.
  /// Arguments: tipipe, the output directory, the play's first time (ms), then the play's source.
  static let script = """
    set -u
    T="$1"; OUT="$2"; START="$3"; shift 3
    coproc PLAY { "$T" play "$@" --window --cache "$OUT/cache" 2>"$OUT/play.err"; echo "{\\"exit\\":$?}"; }
    exec 3<&"${PLAY[0]}"
    phase=0; mark=0; grab=""
    key() { printf '%s %s\\n' "$1" "$(date +%s.%N)" >> "$OUT/keys.txt"; xdotool key "$1"; }
    while IFS= read -r line <&3; do
      printf '%s\\n' "$line" >> "$OUT/play.jsonl"
      case "$line" in
        *'"event":"window"'*)
          set -- $(printf '%s' "$line" | sed -E 's/.*"x":([0-9]+),"y":([0-9]+),"width":([0-9]+),"height":([0-9]+).*/\\1 \\2 \\3 \\4/')
          # 64x64 at the picture's centre (the bar takes the bottom 8 rows).
          ffmpeg -nostdin -v info -copyts -f x11grab -framerate 100 -draw_mouse 0 -video_size 64x64 \\
            -i "$DISPLAY+$(($1 + $3 / 2 - 32)),$(($2 + ($4 - 8) / 2 - 32))" -vf format=gray,showinfo -f null - \\
            2>"$OUT/grab.log" &
          grab=$!;;
        *'"event":"time"'*)
          ms=$(printf '%s' "$line" | sed -E 's/.*"ms":([0-9]+).*/\\1/')
          if [ $phase -eq 0 ] && [ $ms -ge $((START + 4500)) ]; then phase=1; key space; fi
          if [ $phase -eq 2 ] && [ $ms -ge $((mark + 4000)) ]; then phase=3; mark=$((ms + 10000)); key Right; fi
          if [ $phase -eq 3 ] && [ $ms -ge $((mark + 4000)) ]; then phase=4; key q; fi;;
        *'"event":"paused"'*)
          mark=$(printf '%s' "$line" | sed -E 's/.*"ms":([0-9]+).*/\\1/'); sleep 1; phase=2; key space;;
      esac
    done
    if [ -n "$grab" ]; then kill -INT "$grab"; wait "$grab"; fi
    """

  @Test("a library: the beep is heard within 40 ms of the flash at 1×, from the start, after a pause, after a seek")
  func aLibraryPlaysInStep() throws {
    let library = try TemporaryDirectory()
    var options = smallOptions(seconds: 30)
    options.gaps = []
    options.beacon = true
    try LibrarySynthesizer(options: options).write(to: library.url)
    let out = try TemporaryDirectory()
    // The file's own offset comes from an export of the same range (ffmpeg decodes it).
    let export = out.url.appendingPathComponent("reference.mp4")
    let exported = try tipipe([
      "export", "--endpoint", "file://\(library.url.path)", "--start", String(recordingStart), "--end",
      String(recordingStart + 30_000), "--video-channel", "0", "--audio-channel", "1", "--out", export.path,
      "--cache", out.url.appendingPathComponent("cache").path, "--quiet",
    ])
    #expect(exported.status == 0, "\(exported.stderr)")
    try measure(
      [
        "--endpoint", "file://\(library.url.path)", "--start", String(recordingStart), "--end",
        String(recordingStart + 30_000), "--video-channel", "0", "--audio-channel", "1",
      ], from: recordingStart, reference: export, in: out)
  }

  @Test("a media file (ffmpeg's flash and beep): the same, through tipipe play --input")
  func aFilePlaysInStep() throws {
    let out = try TemporaryDirectory()
    let file = out.url.appendingPathComponent("beacon.mp4")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i",
        "color=c=0x404040:s=320x240:r=25,drawbox=color=white:t=fill:enable='lt(mod(t,1),0.1)'", "-f", "lavfi",
        "-i", "aevalsrc='0.5*sin(2*PI*1000*t)*lt(mod(t,1),0.1)':s=16000", "-t", "30", "-c:v", "libx264", "-g", "50",
        "-pix_fmt", "yuv420p", "-c:a", "aac", file.path,
      ])
    try measure(["--input", file.path], from: 0, reference: file, in: out)
  }

  /// Plays `source` (its times from `start`, ms) in a window with the script's keys, and checks every
  /// beacon's A/V offset against `reference`'s own (the medium the play reads, decoded by ffmpeg).
  func measure(_ source: [String], from start: Int64, reference: URL, in out: TemporaryDirectory) throws {
    let fifo = out.url.appendingPathComponent("sdl.fifo")
    try #require(mkfifo(fifo.path, 0o600) == 0)
    let recorder = FIFORecorder(path: fifo.path)
    let script = out.url.appendingPathComponent("lipsync.sh")
    try Data(Self.script.utf8).write(to: script)
    let tipipePath = try tipipeExecutable().path
    _ = try runForStandardError(
      "/usr/bin/env",
      [
        "SDL_AUDIODRIVER=disk", "SDL_DISKAUDIOFILE=\(fifo.path)", "/usr/bin/timeout", "120", "/usr/bin/xvfb-run",
        "-a", "-s", "-screen 0 1280x720x24", "/bin/bash", script.path, tipipePath, out.url.path, String(start),
      ] + source)
    let (reads, sound) = recorder.finish()
    let lines = PlayWindowTests.events(
      (try? String(contentsOf: out.url.appendingPathComponent("play.jsonl"), encoding: .utf8)) ?? "")
    let errors = (try? String(contentsOf: out.url.appendingPathComponent("play.err"), encoding: .utf8)) ?? ""
    #expect(lines.last?["exit"] as? Int == 0, "\(lines.suffix(3)) \(errors)")
    let keys = try String(contentsOf: out.url.appendingPathComponent("keys.txt"), encoding: .utf8)
      .split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
    try #require(keys.count == 4, "space, space, Right, q: \(keys)")

    // The medium's own offset: its beeps against its flashes.
    let fileFlashes = Beacon.flashes(
      in: try runForStandardError(
        "/usr/bin/ffmpeg", ["-i", reference.path, "-vf", "crop=64:64:128:88,format=gray,showinfo", "-f", "null", "-"]),
      field: "pts_time:", scale: 1)
    let fileSound = try runForData(
      "/usr/bin/ffmpeg",
      ["-v", "error", "-i", reference.path, "-map", "0:a", "-f", "f32le", "-ac", "1", "-ar", "16000", "-"]
    ).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    let fileBeeps = Beacon.beeps(in: fileSound, rate: 16_000).map { Double($0) / 16_000 }
    let fileOffsets = Beacon.pairs(flashes: fileFlashes, beeps: fileBeeps).map(\.offset)
    try #require(fileOffsets.count >= 27, "\(fileFlashes.count) flashes, \(fileBeeps.count) beeps in the medium")
    let fileOffset = fileOffsets.sorted()[fileOffsets.count / 2]
    #expect(abs(fileOffset) < 0.025, "the medium's beacon is in step: \(fileOffset) s")

    // What the window showed: each capture's time (µs of real time) and mean luma.
    let grab = (try? String(contentsOf: out.url.appendingPathComponent("grab.log"), encoding: .utf8)) ?? ""
    let flashes = Beacon.flashes(in: grab, field: "pts:", scale: 1e-6)
    // What the speaker played: SDL's thread writes a 1024-sample buffer each 64 ms through stdio, which
    // hands the pipe two buffers at a time; a write arrives in page-sized reads (reads within 5 ms are
    // one write). Buffer k of a write of n was played (written by SDL) (n − 1 − k) × 64 ms before it came.
    var played: [Double] = []
    var writes: [(time: Double, bytes: Int)] = []
    for read in reads {
      if let last = writes.last, read.time - last.time < 0.005 {
        writes[writes.count - 1] = (read.time, last.bytes + read.bytes)
      } else {
        writes.append(read)
      }
    }
    for write in writes {
      let buffers = write.bytes / 4096
      for index in 0..<buffers { played.append(write.time - Double(buffers - 1 - index) * 0.064) }
    }
    let heard = Beacon.beeps(in: sound, rate: 16_000).compactMap { sample -> Double? in
      let buffer = sample / 1024
      return buffer < played.count ? played[buffer] + Double(sample % 1024) / 16_000 : nil
    }
    let pairs = Beacon.pairs(flashes: flashes, beeps: heard)
    let report = pairs.map {
      String(format: "%.2f:%+.1fms", $0.flash - (flashes.first ?? 0), ($0.offset - fileOffset) * 1000)
    }
    // The phases: before the pause, between the resume and the seek, after the seek.
    let phases = [
      pairs.filter { $0.flash < keys[0] }, pairs.filter { $0.flash > keys[1] && $0.flash < keys[2] },
      pairs.filter { $0.flash > keys[2] && $0.flash < keys[3] },
    ]
    #expect(phases.allSatisfy { $0.count >= 3 }, "\(phases.map(\.count)) beacons per phase: \(report)")
    let worst = pairs.map { abs($0.offset - fileOffset) }.max() ?? .infinity
    #expect(worst <= 0.040, "A/V offsets (flash time: beep − flash): \(report)")
  }
}

/// The beacon's marks: flashes in a capture's `showinfo` lines, beeps in decoded samples.
enum Beacon {
  /// The times of the pictures where the mean luma rises above 200 (after one at most 200), from `showinfo`'s `field` (`pts:`,
  /// an integer, or `pts_time:`, six digits) × `scale`.
  static func flashes(in showinfo: String, field: String, scale: Double) -> [Double] {
    var flashes: [Double] = []
    // A flash counts from a dark picture before it: a capture that starts on a flash missed its start.
    var bright = true
    for line in showinfo.split(separator: "\n") where line.contains(" \(field)") && line.contains("mean:[") {
      let value = line.split(separator: " \(field)")[1].drop { $0 == " " }.prefix { $0.isNumber || $0 == "." }
      guard let pts = Double(value),
        let mean = Int(line.split(separator: "mean:[")[1].prefix { $0.isNumber })
      else { continue }
      if mean > 200 && !bright { flashes.append(pts * scale) }
      bright = mean > 200
    }
    return flashes
  }

  /// The first sample of each beep: loud (above 0.1) after at least 50 ms of quiet, and lasting at
  /// least 90 ms (a beep whose start was dropped — sound that came after its time — has no onset).
  static func beeps(in samples: [Float], rate: Int) -> [Int] {
    var onsets: [Int] = []
    var start: Int?
    var lastLoud = -rate
    for (index, value) in samples.enumerated() where abs(value) > 0.1 {
      if index - lastLoud > rate / 20 {
        if let begun = start, lastLoud - begun >= rate * 9 / 100 { onsets.append(begun) }
        start = index
      }
      lastLoud = index
    }
    if let begun = start, lastLoud - begun >= rate * 9 / 100 { onsets.append(begun) }
    return onsets
  }

  /// Each flash with the beep nearest to it (within half a second): the beep's time less the flash's.
  static func pairs(flashes: [Double], beeps: [Double]) -> [(flash: Double, offset: Double)] {
    flashes.compactMap { flash in
      guard let beep = beeps.min(by: { abs($0 - flash) < abs($1 - flash) }), abs(beep - flash) < 0.5 else {
        return nil
      }
      return (flash, beep - flash)
    }
  }
}

/// Reads a FIFO on a thread of its own until its writer closes it, stamping each read with the real time
/// it returned.
final class FIFORecorder: Sendable {
  private let path: String
  private let recorded = Mutex<(reads: [(time: Double, bytes: Int)], data: [UInt8])>(([], []))
  private let done = DispatchSemaphore(value: 0)

  /// Starts reading `path` (the open waits for a writer).
  init(path: String) {
    self.path = path
    let thread = Thread { [self] in
      defer { done.signal() }
      let descriptor = open(path, O_RDONLY)
      guard descriptor >= 0 else { return }
      defer { close(descriptor) }
      var buffer = [UInt8](repeating: 0, count: 1 << 16)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard count > 0 else { return }
        let time = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        recorded.withLock {
          $0.reads.append((time, count))
          $0.data.append(contentsOf: buffer[0..<count])
        }
      }
    }
    thread.start()
  }

  /// Waits (up to 30 s) for the writer to close (a writer that never came is stood in for), then returns
  /// the reads and the bytes as 32-bit floats.
  func finish() -> (reads: [(time: Double, bytes: Int)], samples: [Float]) {
    // If nothing ever opened the FIFO for writing, the reader still waits in open(): open and close it.
    let writer = open(path, O_WRONLY | O_NONBLOCK)
    if writer >= 0 { close(writer) }
    if done.wait(timeout: .now() + 30) == .timedOut { Issue.record("the FIFO's reader did not end") }
    return recorded.withLock { recorded in
      let samples = recorded.data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
      return (recorded.reads, samples)
    }
  }
}
