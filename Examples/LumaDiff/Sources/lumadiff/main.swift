import Foundation
import LumaDiff
import MediaSynthesis
import Nodes
import PipelineGraph
import TiCloudStorage

// Synthesizes a 6-second library, measures how much each picture changes (library → verify → demux →
// decode → gray → LumaDifference), then exports 1–5 s with a second branch counting the keyframes that pass
// (the export starts at the keyframe at 0 s: 125 frames, keyframes at 0, 2 and 4 s).

/// Runs both measures; true when they are what the synthetic library makes them. Everything it holds
/// is released when it returns (a leak check at exit sees no live media).
func measure() async throws -> Bool {
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lumadiff-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: directory) }
  var options = LibrarySynthesizer.Options()
  options.startMilliseconds = 1_795_996_800_000
  options.durationSeconds = 6
  options.segmentSeconds = 3
  options.width = 320
  options.height = 240
  options.fps = 25
  options.gop = 50
  let library = directory.appendingPathComponent("library")
  try LibrarySynthesizer(options: options).write(to: library)
  let video = TrackID(.video, channel: 0)
  let whole = MediaRange(
    startMilliseconds: options.startMilliseconds, endMilliseconds: options.startMilliseconds + 6_000)

  let executor = ThreadExecutor(name: "lumadiff")
  let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
  let source = CloudSegmentSource(directory: library, range: whole)
  let verifier = try SegmentVerifier()
  let demuxer = SegmentDemuxer()
  let decoder = try FrameDecoder(track: video)
  let converter = try PixelConverter(to: .gray8)
  let difference = LumaDifference()
  let changes = Collector<LumaChange>()
  pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
  pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
  pipeline.connect(demuxer, to: decoder)
  pipeline.connect(decoder, to: converter, limits: EdgeLimits(items: 4))
  pipeline.connect(converter, to: difference, limits: EdgeLimits(items: 4))
  pipeline.connect(difference, to: changes)
  let outcome = try await pipeline.run()
  executor.shutdown()
  let values = changes.items.map(\.difference)
  print(
    String(
      format: "%d pictures compared: mean change %.2f, largest %.2f (of 255)", values.count,
      values.reduce(0, +) / Double(max(1, values.count)), values.max() ?? 0))

  let counter = KeyframeCounter(track: video)
  let range = MediaRange(
    startMilliseconds: options.startMilliseconds + 1_000, endMilliseconds: options.startMilliseconds + 5_000)
  let job = try ExportJob(
    request: .init(
      range: range, videoTrack: video, audioTrack: TrackID(.audio, channel: 1),
      output: directory.appendingPathComponent("out.mp4")),
    source: CloudSegmentSource(directory: library, range: range),
    branches: { graph in graph.pipeline.connect(graph.packets, to: counter) },
    completion: { _ in })
  let result = await job.result
  print(
    "exported \(result.report.coveredDurationMs) ms (\(result.code)); the branch counted \(counter.keyframeCount) keyframes in \(counter.packetCount) video packets"
  )

  // Exit status for the test script: the measures must be what the synthetic picture makes them.
  return outcome.reachedEndOfStream && outcome.failures.isEmpty && values.count == 149 && values.allSatisfy { $0 > 0 }
    && result.code == .ok && counter.keyframeCount == 3 && counter.packetCount == 125
}

exit(try await measure() ? 0 : 1)
