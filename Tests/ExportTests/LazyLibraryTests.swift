import Foundation
import MediaTestSupport
import Testing

/// FFmpeg and SDL2 are loaded on the first call of one of their functions (Sources/LazyLibraries): a
/// command that never decodes or opens a window starts without them and the hundred libraries they
/// pull in; one that decodes loads them then and works as before. Judged by the dynamic loader's own
/// account of what it loaded (`LD_DEBUG=files`).
@Suite("Libraries loaded on first use")
struct LazyLibraryTests {
  /// The libraries the loader reports loading, by soname.
  private func loaded(_ run: Finished) -> Set<String> {
    Set(
      run.stderr.split(separator: "\n").compactMap { line -> String? in
        guard let range = line.range(of: "file=") else { return nil }
        return line[range.upperBound...].split(separator: " ").first.map(String.init)
      })
  }

  private let heavy = [
    "libavcodec.so.59", "libavformat.so.59", "libavutil.so.57", "libswscale.so.6", "libswresample.so.4",
    "libSDL2-2.0.so.0",
  ]

  @Test("--help and token start without FFmpeg and SDL2")
  func lightCommandsLoadNeither() throws {
    for arguments in [["--help"], ["token", "--device-id", "cam-1", "--ttl", "60"]] {
      let run = try tipipe(arguments, environment: ["LD_DEBUG": "files"])
      #expect(run.status == 0, "\(arguments): \(run.stderr.suffix(400))")
      let libraries = loaded(run)
      // The loader did report: libc at least.
      #expect(libraries.contains("libc.so.6"))
      #expect(heavy.allSatisfy { !libraries.contains($0) }, "\(arguments) loaded \(libraries.sorted())")
    }
  }

  @Test("a snapshot loads libavcodec at its first decode and writes the picture")
  func aDecodeLoadsFFmpeg() throws {
    let directory = try TemporaryDirectory("tipipe-lazy")
    let library = directory.url.appendingPathComponent("library")
    let start = "1795996800000"
    let synth = try tipipe([
      "synth", "--out", library.path, "--start", start, "--duration", "4", "--segment-seconds", "2", "--size",
      "320x240", "--quiet",
    ])
    #expect(synth.status == 0, "\(synth.stderr)")
    let picture = directory.url.appendingPathComponent("snap.jpg")
    let run = try tipipe(
      [
        "snapshot", "--endpoint", library.absoluteString, "--at", "1795996801500", "--video-channel", "0", "--out",
        picture.path,
      ], environment: ["LD_DEBUG": "files"])
    #expect(run.status == 0, "\(run.stderr.suffix(400))")
    #expect(loaded(run).contains("libavcodec.so.59"))
    // Loaded by tipipe's stubs at run time, not as a dependency of the executable.
    #expect(
      run.stderr.split(separator: "\n").contains { $0.contains("file=libav") && $0.contains("dynamically loaded by") })
    let jpeg = try Data(contentsOf: picture)
    #expect(jpeg.starts(with: [0xFF, 0xD8]) && jpeg.count > 1000)
  }

  @Test("an export of H.264 + AAC loads none of FFmpeg's libraries, holes in its sound filled with silence included")
  func anExportLoadsNoFFmpeg() throws {
    let directory = try TemporaryDirectory("tipipe-lazy-export")
    let library = directory.url.appendingPathComponent("library")
    let start: Int64 = 1_795_996_800_000
    // A tone (no silent frames of its own) with a hole at 1–2 s whose edges leave a hole in the sound.
    let synth = try tipipe([
      "synth", "--out", library.path, "--start", "\(start)", "--duration", "4", "--size", "320x240", "--gap", "1:1",
      "--quiet",
    ])
    try #require(synth.status == 0, "\(synth.stderr)")
    let output = directory.url.appendingPathComponent("out.mp4")
    let exported = try tipipe(
      [
        "export", "--endpoint", library.absoluteString, "--start", "\(start)", "--end", "\(start + 4_000)",
        "--video-channel", "0", "--audio-channel", "1", "--out", output.path, "--quiet",
      ], environment: ["LD_DEBUG": "files"])
    #expect(exported.status == 0, "\(exported.stderr.suffix(400))")
    let libraries = loaded(exported)
    #expect(libraries.contains("libc.so.6"))
    #expect(heavy.allSatisfy { !libraries.contains($0) }, "loaded \(libraries.sorted())")
    // The sound's hole was filled with AAC silence (a 4-byte frame), and the file decodes cleanly.
    let sizes = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "a", "-show_entries", "packet=size", "-of", "csv=p=0", output.path]
    ).split(separator: "\n")
    #expect(sizes.filter { $0 == "4" }.count == 1, "\(sizes)")
    #expect(try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", output.path, "-f", "null", "-"]).isEmpty)
  }
}
