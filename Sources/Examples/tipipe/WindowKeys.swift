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
  private let screen: SDLWindow
  private let finished: DispatchSemaphore

  init(replay: TiCloudStorageReplay, screen: SDLWindow, finished: DispatchSemaphore) {
    self.replay = replay
    self.screen = screen
    self.finished = finished
  }

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
        reportPaused(previous: nil, checks: 0)
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
    case .step, .snapshot:
      // Not yet: frame stepping and snapshots from the window (issue 26).
      break
    }
  }

  /// Once the frame on screen stopped changing (what was already on its way is drawn), names it.
  private func reportPaused(previous: Int?, checks: Int) {
    guard paused else { return }
    let drawn = screen.drawn
    if let drawn, drawn.count == previous || checks >= 40 {
      PlayCommand.line("{\"event\":\"paused\",\"ms\":\(drawn.time.milliseconds)}")
      return
    }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(50)) {
      self.reportPaused(previous: drawn?.count, checks: checks + 1)
    }
  }
}
