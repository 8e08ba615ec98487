import Dispatch
import Foundation
import PipelineGraph

struct DemoOptions {
  var seconds: Int
  var fps: Int

  init(parsing arguments: [String]) throws {
    let flags = try FlagParser(arguments, known: ["--seconds": .value, "--fps": .value])
    seconds = try flags.integer("--seconds", default: 60, range: 1...86_400)
    fps = try flags.integer("--fps", default: 25, range: 1...240)
  }
}

/// A stand-in frame: its presentation time and size.
struct DemoFrame: WeighedItem, Sendable {
  var index: Int
  var pts: Int64
  var byteCount: Int
  var durationMicroseconds: Int64
}

/// Emits one frame per frame interval until the stream's end, with a gap in the middle.
final class FrameSource: SourceNode {
  typealias Output = DemoFrame
  let frames: Int
  let interval: Int64
  var next = 0
  init(frames: Int, fps: Int) {
    self.frames = frames
    interval = 1_000_000 / Int64(fps)
  }
  func start(context: NodeContext<DemoFrame>) throws {
    context.send(.segmentStart(StreamSegment(start: 0, end: Int64(frames) * interval)))
  }
  func produce(context: NodeContext<DemoFrame>) throws -> ProduceResult {
    guard next < frames else { return .finished }
    // Frames 40%–50% of the way are missing: announce a gap instead.
    if next == frames * 4 / 10 {
      let missing = frames / 10
      context.send(.gap(DemoGap(start: Int64(next) * interval, end: Int64(next + missing) * interval)))
      next += missing
      return .produced
    }
    let size = 20_000 + (next % 50 == 0 ? 60_000 : 0)
    context.emit(DemoFrame(index: next, pts: Int64(next) * interval, byteCount: size, durationMicroseconds: interval))
    next += 1
    return .produced
  }
}

struct DemoGap: EventPayload {
  var start: Int64
  var end: Int64
  var description: String { "missing \(start / 1000)…\(end / 1000) ms" }
}

/// Presents each frame at its presentation time on the pipeline clock (a one-speed Pacer).
final class Presenter: Node {
  typealias Input = DemoFrame
  typealias Output = DemoFrame
  var anchor: (clock: ClockInstant, pts: Int64)?
  func process(_ frame: DemoFrame, context: NodeContext<DemoFrame>) throws {
    let anchor = self.anchor ?? (context.now, frame.pts)
    self.anchor = anchor
    let due = ClockInstant(microseconds: anchor.clock.microseconds + frame.pts - anchor.pts)
    context.suspendInput()
    context.scheduleTimer(at: due) {
      context.emit(frame)
      context.resumeInput()
    }
  }
}

/// Counts what it sees; read after the end of stream.
final class Tally: Node, @unchecked Sendable {
  typealias Input = DemoFrame
  typealias Output = Never
  let name: String
  var frames = 0
  var bytes = 0
  var gaps: [String] = []
  var lastPresentedAt: ClockInstant = .zero
  init(name: String) { self.name = name }
  func process(_ frame: DemoFrame, context: NodeContext<Never>) throws {
    frames += 1
    bytes += frame.byteCount
    lastPresentedAt = context.now
  }
  func handle(_ event: PipelineEvent, context: NodeContext<Never>) throws {
    if case .gap(let gap) = event { gaps.append(gap.description) }
  }
}

func runDemo(_ options: DemoOptions) throws {
  let control = ThreadExecutor(name: "tipipe.demo.source")
  let output = ThreadExecutor(name: "tipipe.demo.output")
  defer {
    control.shutdown()
    output.shutdown()
  }
  let clock = VirtualClock(freeRunning: true)
  let pipeline = Pipeline(executor: control, clock: clock)
  let source = FrameSource(frames: options.seconds * options.fps, fps: options.fps)
  let presenter = Presenter()
  let display = Tally(name: "display")
  let archive = Tally(name: "archive")
  pipeline.add(presenter, on: output)
  pipeline.add(display, on: output)
  pipeline.connect(
    source, to: presenter, limits: EdgeLimits(items: 64, bytes: 2_000_000, durationMicroseconds: 2_000_000),
    threadBoundary: true)
  pipeline.connect(presenter, to: display, limits: EdgeLimits(items: 4))
  pipeline.connect(source, to: archive, limits: EdgeLimits(items: 16))
  let finished = DispatchSemaphore(value: 0)
  let failures = FailureBox()
  pipeline.errorHandler = { failure in
    failures.record(failure)
    return .stopPipeline
  }
  pipeline.onEndOfStream = { finished.signal() }
  pipeline.onStop = { finished.signal() }
  let began = Date()
  try pipeline.start()
  finished.wait()
  let wall = Date().timeIntervalSince(began)
  if let failure = failures.first { throw failure.error }

  print(pipeline.dot())
  let media = Double(display.lastPresentedAt.microseconds) / 1e6
  print("presented \(display.frames) frames over \(String(format: "%.2f", media)) s of clock time")
  print("archived \(archive.frames) frames, \(archive.bytes) bytes; gaps: \(display.gaps.joined(separator: ", "))")
  print("wall time \(String(format: "%.3f", wall)) s (free-running clock: \(Int(media / max(wall, 1e-6)))× real time)")
  print("")
  print("node                    items in  items out  events  busy ms  input high-water")
  for node in pipeline.statistics().nodes {
    let name = node.name.padding(toLength: 22, withPad: " ", startingAt: 0)
    print(
      "\(name) \(pad(node.itemsIn, 9)) \(pad(node.itemsOut, 10)) \(pad(node.eventsIn, 7)) "
        + "\(pad(Int(node.busyNanoseconds / 1_000_000), 8)) \(pad(node.inputHighWater, 17))")
  }
  pipeline.stop()
}

private func pad(_ value: Int, _ width: Int) -> String {
  let text = String(value)
  return String(repeating: " ", count: max(0, width - text.count)) + text
}

/// The first failure the error handler saw.
final class FailureBox: @unchecked Sendable {
  private let lock = NSLock()
  private var failures: [NodeFailure] = []
  func record(_ failure: NodeFailure) { lock.withLock { failures.append(failure) } }
  var first: NodeFailure? { lock.withLock { failures.first } }
}
