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
}
