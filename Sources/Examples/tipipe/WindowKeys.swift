import DesktopOutputs
import Dispatch
import Foundation
import Nodes
import TiCloudStorage

/// `tipipe play --window`: what the window's keys do to the play, on the main queue (where the play's
/// callbacks and lines are).
final class WindowKeys: @unchecked Sendable {
  // Confined to the main queue.
  private var paused = false
  private let replay: TiCloudStorageReplay
  private let video: TiCloudStorageVideoOutput
  private let screen: SDLWindow
  private let finished: DispatchSemaphore

  init(replay: TiCloudStorageReplay, video: TiCloudStorageVideoOutput, screen: SDLWindow, finished: DispatchSemaphore) {
    self.replay = replay
    self.video = video
    self.screen = screen
    self.finished = finished
  }

  /// The title shows the play's time (UTC) and speed.
  func timeChanged(_ ms: Int64) {
    let date = Date(timeIntervalSince1970: Double(ms) / 1000)
    screen.setCaption(
      "tipipe play — \(Self.clock.string(from: date)) UTC · \(replay.speed)×\(paused ? " · paused" : "")")
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
      _ = replay.stop()
      finished.signal()
    case .togglePause:
      paused.toggle()
      if paused {
        _ = replay.pause()
        reportPaused(previous: nil, checks: 0, event: "paused")
      } else {
        _ = replay.resume()
      }
    case .seek(let seconds):
      guard let now = replay.currentTimeMs else { return }
      _ = replay.seek(toTimeMs: now + Int64(seconds) * 1000)
    case .changeSpeed(let steps):
      let all: [ReplaySpeed] = [.x0_125, .x0_25, .x0_5, .x1, .x2, .x4, .x8]
      guard let index = all.firstIndex(of: replay.speed) else { return }
      let next = all[max(0, min(all.count - 1, index + steps))]
      if next != replay.speed {
        _ = replay.setSpeed(next)
        PlayCommand.line("{\"event\":\"speed\",\"speed\":\"\(next)\"}")
      }
    case .step(let frames):
      // One frame on or back while paused: a seek to the time next to the frame on screen (the first
      // frame at or after it is shown, as a paused seek shows).
      guard paused, let drawn = screen.drawn else { return }
      let frame = max(1, drawn.duration.milliseconds)
      _ = replay.seek(toTimeMs: drawn.time.milliseconds + Int64(frames) * frame)
      reportPaused(previous: drawn.count, checks: 0, event: "step")
    case .snapshot:
      video.takeSnapshot { result in
        let file = result.file.map { PlayCommand.jsonString($0.path) } ?? "null"
        PlayCommand.line("{\"event\":\"snapshot\",\"code\":\(result.code),\"file\":\(file)}")
      }
    }
  }

  /// Once the frame on screen stopped changing (what was already on its way is drawn), names it in an
  /// `event` line (`paused`, `step`).
  private func reportPaused(previous: Int?, checks: Int, event: String) {
    guard paused else { return }
    let drawn = screen.drawn
    // A step waits for the frame it asked for (the count moves past `previous`), then for it to stay.
    let settled = event == "paused" || checks > 0
    if let drawn, settled, drawn.count == previous || checks >= 40 {
      PlayCommand.line("{\"event\":\"\(event)\",\"ms\":\(drawn.time.milliseconds)}")
      return
    }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(50)) {
      self.reportPaused(previous: drawn?.count, checks: checks + 1, event: event)
    }
  }
}
