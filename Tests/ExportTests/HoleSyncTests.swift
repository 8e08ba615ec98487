import Foundation
import MediaTestSupport
import Testing

/// Picture and sound in step across the holes an export or a play's recording closes up: a beacon
/// library (a white flash and a beep at each second) with two holes, whose sound frames (64 ms at
/// 16 kHz) straddle the holes' edges. An MP4 sound track has no holes of its own, and players let the
/// sound run as the clock: a hole left in a sample's duration pulled the sound ahead at every hole.
@Suite struct HoleSyncTests {
  @Test(
    "export and play --record: every beep within half a sound frame of its flash after each hole, never adding up; the sound a run of whole frames",
    arguments: ["export", "play --record"])
  func soundStaysInStepAcrossHoles(path: String) throws {
    let directory = try TemporaryDirectory("hole-sync")
    let library = directory.url.appendingPathComponent("library")
    let start: Int64 = 1_700_000_000_000
    try beaconLibrary(at: library, start: start, seconds: 20, gaps: [(5, 2), (12, 1)])
    let output = directory.url.appendingPathComponent("out.mp4")
    let range = ["--start", "\(start)", "--end", "\(start + 20_000)", "--video-channel", "0", "--audio-channel", "1"]
    let done =
      path == "export"
      ? try tipipe(["export", "--endpoint", "file://" + library.path] + range + ["--out", output.path, "--quiet"])
      : try tipipe(
        ["play", "--endpoint", "file://" + library.path] + range + ["--pace", "fast", "--record", output.path])
    #expect(done.status == 0, "\(done.stderr)")
    // 17 s of media: the source's seconds 0–4, 7–11 and 13–19.
    let (flashes, beeps) = try flashesAndBeeps(in: output.path)
    #expect(flashes.count == 17, "\(flashes)")
    #expect(beeps.count >= 17, "\(beeps)")
    for (flash, beep) in zip(flashes, beeps) {
      #expect(abs(beep - flash) <= 0.034, "flash at \(flash) s, beep at \(beep) s")
    }
    // Every sound sample is one AAC frame long: no sample stretched over a hole.
    let durations = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "a", "-show_entries", "packet=duration_time", "-of", "csv=p=0", output.path]
    ).split(separator: "\n").compactMap { Double($0) }
    #expect(!durations.isEmpty && durations.allSatisfy { abs($0 - 0.064) < 0.0005 }, "\(Set(durations))")
    #expect(try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"]).isEmpty)
  }
}
