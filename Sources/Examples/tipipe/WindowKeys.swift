import DesktopOutputs
import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// What the window's keys act on: a play of the SDK's Replay (`tipipe play --endpoint`) or of a media
/// file (`tipipe play --input`). Called on the main queue.
protocol WindowPlay: AnyObject {
  /// The speed now.
  var speed: ReplaySpeed { get }
  /// The play's position (ms on its timeline), once it has one.
  var positionMs: Int64? { get }
  func pause()
  func resume()
  func seek(toMs: Int64)
  func setSpeed(_ speed: ReplaySpeed)
  /// Ends the play (the command prints its summary).
  func stop()
  /// Saves the frame on screen; `done` gets the line to print.
  func snapshot(_ done: @escaping @Sendable (String) -> Void)
}

/// `tipipe play --window`: what the window's keys do to the play, on the main queue (where the play's
/// callbacks and lines are).
final class WindowKeys: @unchecked Sendable {
  // Confined to the main queue.
  private var paused = false
  private let play: any WindowPlay
  private let screen: SDLWindow
  /// UTC clock times in the title (a library's timeline); seconds from the start for a file.
  private let showsDates: Bool

  init(play: any WindowPlay, screen: SDLWindow, showsDates: Bool = true) {
    self.play = play
    self.screen = screen
    self.showsDates = showsDates
  }

  /// The play's range (the bar's width), what the listing says is not recorded in it, and the gaps
  /// crossed so far.
  private var range: MediaRange?
  private var unrecorded: [MediaRange] = []
  private var gaps: [MediaRange] = []
  private var position: MediaTime?

  /// The bar under the picture spans `range` (ms on the play's timeline).
  func setRange(fromMs start: Int64, toMs end: Int64) {
    // Times from a file are anything: one MediaTime cannot hold is no bar.
    guard end > start, let from = MediaTime(checkedMilliseconds: start), let to = MediaTime(checkedMilliseconds: end)
    else { return }
    range = MediaRange(start: from, end: to)
    updateBar()
  }

  /// A gap the play crossed, shown red in the bar.
  func gap(fromMs start: Int64, toMs end: Int64) {
    guard let from = MediaTime(checkedMilliseconds: start), let to = MediaTime(checkedMilliseconds: max(start, end))
    else { return }
    gaps.append(MediaRange(start: from, end: to))
    updateBar()
  }

  /// The recorded ranges of the play's range, as the listing gives them (UTC ms): the stretches between
  /// them are shown red from the start, before the play gets there.
  func recorded(_ ranges: [(startMs: Int64, endMs: Int64)]) {
    guard let range else { return }
    var holes: [MediaRange] = []
    var cursor = range.start
    for (start, end) in ranges.sorted(by: { $0.startMs < $1.startMs }) {
      guard let from = MediaTime(checkedMilliseconds: start), let to = MediaTime(checkedMilliseconds: end) else {
        continue
      }
      if from > cursor { holes.append(MediaRange(start: cursor, end: min(from, range.end))) }
      cursor = max(cursor, to)
    }
    if cursor < range.end { holes.append(MediaRange(start: cursor, end: range.end)) }
    unrecorded = holes.filter { !$0.isEmpty }
    updateBar()
  }

  private func updateBar() {
    guard let range else { return }
    screen.showTimeline(SDLWindow.Timeline(range: range, gaps: unrecorded + gaps, position: position))
  }

  /// The title shows the play's time and speed, the bar where it is.
  func timeChanged(_ ms: Int64) {
    position = MediaTime(checkedMilliseconds: ms)
    updateBar()
    let time =
      showsDates
      ? Self.clock.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)) + " UTC"
      : String(format: "%.3f s", Double(ms) / 1000)
    screen.setCaption("tipipe play — \(time) · \(play.speed)×\(paused ? " · paused" : "")")
  }

  private static let clock: DateFormatter = {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
    return formatter
  }()

  /// Says where the window is and starts taking keys.
  func start() {
    let placement = screen.placement
    PlayCommand.line(
      "{\"event\":\"window\",\"x\":\(placement.x),\"y\":\(placement.y),\"width\":\(placement.width),"
        + "\"height\":\(placement.height)}")
    screen.onCommand = { command in DispatchQueue.main.async { self.handle(command) } }
  }

  private func handle(_ command: SDLWindow.Command) {
    switch command {
    case .quit:
      screen.onCommand = nil
      play.stop()
    case .togglePause:
      paused.toggle()
      if paused {
        play.pause()
        reportPaused(previous: nil, checks: 0, event: "paused")
      } else {
        play.resume()
      }
    case .seek(let seconds):
      guard let now = play.positionMs else { return }
      play.seek(toMs: now + Int64(seconds) * 1000)
    case .changeSpeed(let steps):
      let all: [ReplaySpeed] = [.x0_125, .x0_25, .x0_5, .x1, .x2, .x4, .x8]
      guard let index = all.firstIndex(of: play.speed) else { return }
      let next = all[max(0, min(all.count - 1, index + steps))]
      if next != play.speed {
        play.setSpeed(next)
        PlayCommand.line("{\"event\":\"speed\",\"speed\":\"\(next)\"}")
      }
    case .step(let frames):
      // One frame on or back while paused: a seek to the time next to the frame on screen (the first
      // frame at or after it is shown, as a paused seek shows).
      guard paused, let drawn = screen.drawn else { return }
      let frame = max(1, drawn.duration.milliseconds)
      play.seek(toMs: drawn.time.milliseconds + Int64(frames) * frame)
      reportPaused(previous: nil, checks: 0, event: "step", past: drawn.count)
    case .snapshot:
      play.snapshot { line in PlayCommand.line(line) }
    }
  }

  /// Once the frame on screen stopped changing (what was already on its way is drawn), names it in an
  /// `event` line (`paused`, `step`).
  private func reportPaused(previous: Int?, checks: Int, event: String, past original: Int? = nil) {
    guard paused else { return }
    let drawn = screen.drawn
    // A step waits for the frame it asked for (the count moves past `original`: a slow seek may take
    // many checks), then for it to stay; 5 s at most.
    let moved = original.map { (drawn?.count ?? 0) > $0 } ?? true
    if let drawn, moved && drawn.count == previous || checks >= 100 {
      PlayCommand.line("{\"event\":\"\(event)\",\"ms\":\(drawn.time.milliseconds)}")
      return
    }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(50)) {
      self.reportPaused(previous: drawn?.count, checks: checks + 1, event: event, past: original)
    }
  }
}

/// The SDK's Replay and its Video Output, as the window's keys see them.
final class ReplayWindowPlay: WindowPlay, @unchecked Sendable {
  private let replay: TiCloudStorageReplay
  private let video: TiCloudStorageVideoOutput
  private let finished: DispatchSemaphore

  init(replay: TiCloudStorageReplay, video: TiCloudStorageVideoOutput, finished: DispatchSemaphore) {
    self.replay = replay
    self.video = video
    self.finished = finished
  }

  var speed: ReplaySpeed { replay.speed }
  var positionMs: Int64? { replay.currentTimeMs }
  func pause() { _ = replay.pause() }
  func resume() { _ = replay.resume() }
  func seek(toMs ms: Int64) { _ = replay.seek(toTimeMs: ms) }
  func setSpeed(_ speed: ReplaySpeed) { _ = replay.setSpeed(speed) }

  func stop() {
    _ = replay.stop()
    finished.signal()
  }

  func snapshot(_ done: @escaping @Sendable (String) -> Void) {
    video.takeSnapshot { result in
      let file = result.file.map { PlayCommand.jsonString($0.path) } ?? "null"
      done("{\"event\":\"snapshot\",\"code\":\(result.code),\"file\":\(file)}")
    }
  }
}
