import Foundation
import Nodes
import PipelineGraph
import SceneCuts
import TiCloudStorage

// scenecuts [INPUT [OUT.mp4 [OUT.csv]]]: finds the scene changes of INPUT on its decoded pictures and
// writes, in the same pass, an MP4 of half a second before to a second after each change, cut exactly
// there, and the changes as CSV. Without INPUT it makes one with the ffmpeg CLI (default libx264 with
// B-frames, AAC): four 3-second scenes, so the changes are at 3, 6 and 9 s and it checks what it finds.

/// Four scenes of 3 s and a tone, from ffmpeg's test sources.
func makeDemoInput(at path: String) throws {
  let scenes = ["testsrc", "smptebars", "mandelbrot", "rgbtestsrc"]
  var arguments = ["-v", "error", "-y"]
  for scene in scenes { arguments += ["-f", "lavfi", "-t", "3", "-i", "\(scene)=size=320x240:rate=25"] }
  arguments += ["-f", "lavfi", "-t", "12", "-i", "sine=frequency=330:sample_rate=44100"]
  arguments += ["-filter_complex", "[0:v][1:v][2:v][3:v]concat=n=4:v=1:a=0[v]", "-map", "[v]", "-map", "4:a"]
  // 8-bit 4:2:0, as cameras make it (ffmpeg's test sources are RGB: libx264 would pick 4:4:4).
  arguments += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", path]
  let ffmpeg = Process()
  ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
  ffmpeg.arguments = arguments
  // Its end is polled: `waitUntilExit()`'s RunLoop wait can stay asleep on Linux after the child ended
  // (swift-corelibs-foundation #3869).
  try ffmpeg.run()
  while ffmpeg.isRunning { usleep(10_000) }
  guard ffmpeg.terminationStatus == 0 else { throw MediaError(.ioFailed, "ffmpeg could not make the demo input") }
}

/// One pass: scene changes on the pictures decide which packets the export keeps. True when the demo's
/// changes and cuts are where its scenes are (or, for a given input, when the export succeeded).
func cutScenes() async throws -> Bool {
  let arguments = Array(CommandLine.arguments.dropFirst())
  let work = FileManager.default.temporaryDirectory.appendingPathComponent("scenecuts-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: work) }
  let demo = arguments.isEmpty
  let input = arguments.first ?? work.appendingPathComponent("scenes.mp4").path
  if demo { try makeDemoInput(at: input) }
  let output = URL(fileURLWithPath: arguments.count > 1 ? arguments[1] : work.appendingPathComponent("cut.mp4").path)
  let csv = URL(fileURLWithPath: arguments.count > 2 ? arguments[2] : work.appendingPathComponent("scenes.csv").path)

  let info = try MediaFileSource.probe(path: input)
  guard let picture = info.video else { throw MediaError(.noMedia, "\(input) has no video") }
  let video = TrackID(.video, channel: 0)
  let audio = info.audio == nil ? nil : TrackID(.audio, channel: 1)
  let decisions = ValveDecisions()
  let detector = SceneDetector(decisions: decisions)
  let job = try ExportJob(
    request: .init(range: picture.range, videoTrack: video, audioTrack: audio, output: output, cut: .exact),
    packets: MediaFileSource(path: input),
    branches: { graph in
      // The deciding branch: decode the same packets and look at the pictures.
      let decoder = try FrameDecoder(track: video)
      graph.pipeline.connect(graph.packets, to: decoder, limits: EdgeLimits(items: 32))
      graph.pipeline.connect(decoder, to: detector, limits: EdgeLimits(items: 8))
    },
    valve: Valve(decisions: decisions, videoTrack: video, audioTrack: audio), completion: { _ in })
  let result = await job.result

  let origin = Double(info.start.microseconds) / 1e6
  let seconds = { (time: MediaTime) in Double(time.microseconds) / 1e6 - origin }
  let rows = detector.changes.map { String(format: "%.3f,%.1f", seconds($0.time), $0.difference) }
  try (["time_s,difference"] + rows).joined(separator: "\n").appending("\n").write(
    to: csv, atomically: true, encoding: .utf8)
  print("\(detector.changes.count) scene change(s): \(rows.joined(separator: "  "))")
  let starts = result.report.segments.map { Double($0.sourceRange.startMs) / 1000 - origin }
  print(
    "\(result.code): \(result.report.coveredDurationMs) ms in \(result.report.segments.count) stretch(es) starting at "
      + starts.map { String(format: "%.3f s", $0) }.joined(separator: ", ") + " → \(output.path)")
  guard demo else { return result.code == .ok }

  // The demo's scenes change at 3, 6 and 9 s; each stretch starts at the first picture from half a second
  // before (25 fps: 2.52, 5.52, 8.52 s), exactly, and lasts to a second after (and the few pictures past
  // it that B-frames before it refer to: at most 4 here).
  let found = detector.changes.map { seconds($0.time) }
  let expected: [Double] = [3, 6, 9]
  let changesRight = found.count == 3 && zip(found, expected).allSatisfy { abs($0 - $1) < 0.001 }
  let startsRight = starts.count == 3 && zip(starts, expected).allSatisfy { abs($0 - ($1 - 0.48)) < 0.001 }
  let duration = Double(try MediaFileSource.probe(path: output.path).video?.range.duration.microseconds ?? 0) / 1e6
  let lengthRight = duration >= 3 * 1.48 - 0.001 && duration <= 3 * (1.48 + 0.16) + 0.001
  print("checks: changes \(changesRight), starts \(startsRight), length \(lengthRight) (\(duration) s)")
  return result.code == .ok && changesRight && startsRight && lengthRight
}

do {
  exit(try await cutScenes() ? 0 : 1)
} catch {
  FileHandle.standardError.write(Data("scenecuts: \(error)\n".utf8))
  exit(1)
}
