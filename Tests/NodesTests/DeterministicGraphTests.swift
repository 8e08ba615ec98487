import Foundation
import Glibc
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// Worker executor that runs its jobs through a manual executor and notes the thread of each.
final class ObservedWorkers: WorkerExecutor, @unchecked Sendable {
  let executor: ManualExecutor
  private let lock = NSLock()
  private var _threads: [pthread_t] = []
  init(_ executor: ManualExecutor) { self.executor = executor }
  func execute(_ job: @escaping @Sendable () -> Void) {
    executor.execute { [self] in
      lock.withLock { _threads.append(pthread_self()) }
      job()
    }
  }
  var threads: [pthread_t] { lock.withLock { _threads } }
}

/// Passes packets on and notes the thread each one crossed on.
final class ThreadProbe: Node {
  typealias Input = EncodedPacket
  typealias Output = EncodedPacket
  let name = "ThreadProbe"
  var threads: Set<UInt> = []
  var packets = 0
  func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    threads.insert(UInt(pthread_self()))
    packets += 1
    context.emit(input)
  }
}

@Suite("Media graphs on the manual executor")
struct DeterministicGraphTests {
  @Test("library → verifier → demuxer → router → decoder + transcoder → exporter runs on the test's thread alone")
  func wholeGraphOnTheTestThread() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 9)).write(to: directory.url)
    let output = directory.url.appendingPathComponent("working.mp4")
    let range = MediaRange(startMilliseconds: recordingStart + 1_000, endMilliseconds: recordingStart + 8_000)

    func runOnce() throws -> (frames: Int, report: ExportReport, workers: [pthread_t], probe: ThreadProbe) {
      let executor = ManualExecutor()
      let workers = ObservedWorkers(executor)
      let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true), workers: workers)
      // The library's reads on the pipeline's workers too.
      let source = CloudSegmentSource(directory: directory.url, range: range, prefetchBytes: 1 << 20, workers: workers)
      let verifier = try SegmentVerifier(parallelism: 3)
      let demuxer = SegmentDemuxer(startingAt: range.start)
      let probe = ThreadProbe()
      let video = TrackID(.video, channel: 0)
      let audio = TrackID(.audio, channel: 1)
      let router = TrackRouter(tracks: [video, audio])
      let decoder = try FrameDecoder(track: video)
      let frames = CollectingSink<DecodedFrame>()
      let transcoder = try AudioTranscoder()
      let exporter = Exporter(
        configuration: .init(range: range, videoTrack: video, audioTrack: audio, workingPath: output.path))
      pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
      pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
      pipeline.connect(demuxer, to: probe, limits: EdgeLimits(items: 16))
      pipeline.connect(probe, to: router, limits: EdgeLimits(items: 16))
      pipeline.connect(router, to: decoder, limits: EdgeLimits(items: 16))
      pipeline.connect(decoder, to: frames, limits: EdgeLimits(items: 4))
      pipeline.connect(router, to: transcoder, limits: EdgeLimits(items: 16))
      pipeline.connect(transcoder, to: exporter, limits: EdgeLimits(items: 16))
      let outcome = try pipeline.runToCompletion(patience: .milliseconds(1))
      #expect(outcome.reachedEndOfStream && outcome.failures.isEmpty)
      let report = exporter.report(termination: .exhausted, cause: 0)
      exporter.abandonFile()
      try? FileManager.default.removeItem(at: output)
      return (frames.items.count, report, workers.threads, probe)
    }

    let first = try runOnce()
    let me = pthread_self()
    // Listings, reads and verifications went through the pipeline's workers, all on this thread; so did
    // every node.
    #expect(first.workers.count >= 7)  // a listing, 3 objects read, 3 verified
    #expect(first.workers.allSatisfy { pthread_equal($0, me) != 0 })
    #expect(first.probe.threads == [UInt(me)])
    // The decoder gets every frame from the keyframe at 0 s (GOPs of 2 s) to the library's end at 9 s;
    // the export starts at that keyframe and ends at 8 s.
    #expect(first.frames == 225)
    #expect(first.report.coveredDurationMs == 8_000)
    #expect(first.report.complete)
    // Deterministic: a second run sees exactly the same.
    let second = try runOnce()
    #expect(second.frames == first.frames && second.report == first.report)
    #expect(second.workers.count == first.workers.count && second.probe.packets == first.probe.packets)
  }

  @Test("the demuxer keeps the edge after it within its item and byte bounds across a thread boundary")
  func demuxerRespectsBounds() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 9)).write(to: directory.url)
    let range = MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 9_000)
    let reader = ThreadExecutor(name: "test.demux")
    let writer = ThreadExecutor(name: "test.sink")
    defer {
      reader.shutdown()
      writer.shutdown()
    }
    let pipeline = Pipeline(executor: reader, clock: MonotonicClock())
    let source = CloudSegmentSource(directory: directory.url, range: range, prefetchBytes: 1 << 20)
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer()
    let sink = CollectingSink<EncodedPacket>()
    pipeline.add(sink, on: writer)
    let byteBound = 16 << 10
    pipeline.connect(source, to: verifier, limits: EdgeLimits(items: 2))
    pipeline.connect(verifier, to: demuxer, limits: EdgeLimits(items: 2))
    pipeline.connect(demuxer, to: sink, limits: EdgeLimits(items: 4, bytes: byteBound), threadBoundary: true)
    let outcome = try pipeline.runToCompletion()
    #expect(outcome.reachedEndOfStream && outcome.failures.isEmpty)
    let packets = sink.items
    // 9 s at 25 fps, and every audio frame: all of the three objects' hundreds of packets each.
    #expect(packets.count { $0.track.kind == .video } == 225)
    let largest = packets.map(\.data.count).max() ?? 0
    let edge = pipeline.statistics().edges[2]
    #expect(edge.highWaterItems <= 4)
    #expect(edge.highWaterBytes < byteBound + largest)
  }
}
