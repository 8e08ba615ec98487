internal import CSDL2
import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// A Video Output's view on the desktop: a window (SDL2, X11 or Wayland) that shows the frames it is
/// given, aspect kept and letterboxed, resizable and fullscreen (`f`).
///
/// SDL's video calls are made on one thread the window owns (SDL wants window, renderer and events on
/// one thread); ``render(_:)`` only leaves the newest frame in a mailbox and wakes that thread, so the
/// replay's executor never waits for the screen. 4:2:0 pictures are uploaded to an IYUV texture as
/// they are (no conversion on the CPU); other formats are not drawn (``undrawnFrames`` counts them).
/// Keys become ``Command``s for whoever plays (``onCommand``). ``close()`` (or `deinit`) ends the thread
/// and frees everything SDL made.
public final class SDLWindow: VideoRenderer, @unchecked Sendable {
  /// What a key asks of the play.
  public enum Command: Sendable, Equatable {
    /// `q`, Esc or the window closed.
    case quit
    /// Space.
    case togglePause
    /// ←/→ (∓10 s), ↑/↓ (±60 s): seconds to move.
    case seek(seconds: Int)
    /// `+`/`=` (+1) and `-` (−1): one step along 1/8…8.
    case changeSpeed(steps: Int)
    /// `.` (+1) and `,` (−1): one frame while paused.
    case step(frames: Int)
    /// `s`.
    case snapshot
  }

  /// Where a picture of `width` × `height` pixels shaped `pixelAspect` (width over height) is drawn in an
  /// area of `area` pixels: the largest rectangle of the picture's shape inside it, centred (black bars).
  package static func fit(width: Int, height: Int, pixelAspect: Double, into area: (width: Int, height: Int))
    -> Placement
  {
    let pictureWidth = Double(width) * (pixelAspect > 0 && pixelAspect.isFinite ? pixelAspect : 1)
    guard pictureWidth > 0, height > 0 else { return Placement(x: 0, y: 0, width: 0, height: 0) }
    let scale = min(Double(area.width) / pictureWidth, Double(area.height) / Double(height))
    let shown = (width: Int(pictureWidth * scale), height: Int(Double(height) * scale))
    return Placement(
      x: (area.width - shown.width) / 2, y: (area.height - shown.height) / 2, width: shown.width, height: shown.height)
  }

  /// Where the window is on the screen and how big its drawing area is (pixels).
  public struct Placement: Sendable, Equatable {
    /// Left and top of the drawing area on the screen.
    public var x: Int, y: Int
    /// Size of the drawing area.
    public var width: Int, height: Int
  }

  /// The frame on screen.
  public struct Drawn: Sendable, Equatable {
    /// Its media time.
    public var time: MediaTime
    /// How long it lasts.
    public var duration: MediaDuration
    /// Frames drawn so far, this one included.
    public var count: Int
  }

  /// What the bar under the picture shows: the play's range, its gaps and where the play is.
  public struct Timeline: Sendable, Equatable {
    /// The whole range (the bar's width).
    public var range: MediaRange
    /// Stretches without media (red).
    public var gaps: [MediaRange]
    /// The play's position (a white mark; what lies before it is lighter).
    public var position: MediaTime?

    /// A timeline of `range`.
    public init(range: MediaRange, gaps: [MediaRange] = [], position: MediaTime? = nil) {
      self.range = range
      self.gaps = gaps
      self.position = position
    }
  }

  /// Rows under the picture that the timeline bar takes (when one is shown).
  public static let barHeight: Int32 = 8

  private struct Shared {
    var pending: DecodedFrame?
    var caption: String?
    var timeline: Timeline?
    var timelineChanged = false
    var onCommand: (@Sendable (Command) -> Void)?
    var drawn: Drawn?
    var lastFrame: DecodedFrame?
    var undrawn = 0
    var placement = Placement(x: 0, y: 0, width: 0, height: 0)
    var running = true
  }

  private let shared = Locked(Shared())
  private let wakeEvent: UInt32
  private var thread: Thread?
  private let ended = DispatchSemaphore(value: 0)

  /// Why there is no window: no display (`DISPLAY`/`WAYLAND_DISPLAY` unset or refused), or SDL could
  /// not make a window or a renderer there; SDL's own words.
  public struct Unavailable: Error, CustomStringConvertible {
    /// What SDL said.
    public let description: String
  }

  /// Opens a window titled `title` with a drawing area of `width` × `height`.
  /// - Throws: ``Unavailable`` when there is no display or SDL cannot make a window.
  public init(title: String, width: Int = 960, height: Int = 540) throws {
    let ready = DispatchSemaphore(value: 0)
    let failure = Locked<String?>(nil)
    let registered = Locked<UInt32>(0)
    let shared = self.shared
    let ended = self.ended
    let thread = Thread {
      do {
        let loop = try Loop(title: title, width: width, height: height, shared: shared)
        registered.withLock { $0 = loop.wakeEvent }
        ready.signal()
        loop.run()
      } catch {
        failure.withLock { $0 = "\(error)" }
        ready.signal()
      }
      // The loop is gone (it lives in the scope above): SDL's window, renderer and subsystem are closed,
      // so a process that exits right after close() leaves nothing of SDL's behind.
      ended.signal()
    }
    thread.name = "tipipe.window"
    thread.start()
    ready.wait()
    if let message = failure.withLock({ $0 }) {
      throw Unavailable(description: "cannot open a window: \(message)")
    }
    wakeEvent = registered.withLock { $0 }
    self.thread = thread
  }

  deinit { close() }

  /// Called on the window's thread for each key that asks something of the play.
  public var onCommand: (@Sendable (Command) -> Void)? {
    get { shared.withLock { $0.onCommand } }
    set { shared.withLock { $0.onCommand = newValue } }
  }

  /// Shows `frame` as soon as the window's thread gets to it; a frame not yet shown is replaced.
  public func render(_ frame: DecodedFrame) {
    let wakeEvent = self.wakeEvent
    shared.withLock { state in
      // Pushed under the lock: close() cannot end the loop (and SDL's event queue with it) in between.
      if state.pending == nil && state.running { Self.push(wakeEvent) }
      state.pending = frame
    }
  }

  /// The frame on screen; nil before the first.
  public var drawn: Drawn? { shared.withLock { $0.drawn } }

  /// Shows `timeline` in a bar under the picture (the picture gives it ``barHeight`` rows); nil hides it.
  public func showTimeline(_ timeline: Timeline?) {
    let wakeEvent = self.wakeEvent
    shared.withLock { state in
      guard state.timeline != timeline else { return }
      if !state.timelineChanged && state.pending == nil && state.running { Self.push(wakeEvent) }
      (state.timeline, state.timelineChanged) = (timeline, true)
    }
  }

  /// The picture on screen (for a snapshot); nil before the first.
  public var lastFrame: DecodedFrame? { shared.withLock { $0.lastFrame } }

  /// The window's title (the play's time and speed, say); shown as soon as the window's thread gets to it.
  public func setCaption(_ caption: String) {
    let wakeEvent = self.wakeEvent
    shared.withLock { state in
      if state.caption == nil && state.pending == nil && state.running { Self.push(wakeEvent) }
      state.caption = caption
    }
  }

  /// Frames given in a format the window does not draw.
  public var undrawnFrames: Int { shared.withLock { $0.undrawn } }

  /// Where the drawing area is on the screen.
  public var placement: Placement { shared.withLock { $0.placement } }

  /// Closes the window and ends its thread (idempotent).
  public func close() {
    let (wakeEvent, started) = (self.wakeEvent, thread != nil)
    let wasRunning = shared.withLock { state -> Bool in
      guard state.running else { return false }
      state.running = false
      // Under the lock: the loop sees `running` false only after this, so SDL's queue is still there.
      if started { Self.push(wakeEvent) }
      return true
    }
    guard wasRunning, started else { return }
    ended.wait()
  }

  private static func push(_ type: UInt32) {
    var event = SDL_Event()
    event.type = type
    _ = SDL_PushEvent(&event)
  }

  /// The window's thread: SDL's window, renderer, texture and event loop.
  private final class Loop {
    let window: OpaquePointer
    let renderer: OpaquePointer
    var texture: OpaquePointer?
    var textureSize = (width: 0, height: 0)
    /// The width the uploaded picture is shown at for each of its pixels (its pixels' shape, 1 when square).
    var pixelAspect = 1.0
    let wakeEvent: UInt32
    let shared: Locked<Shared>
    var fullscreen = false

    init(title: String, width: Int, height: Int, shared: Locked<Shared>) throws {
      self.shared = shared
      // Pictures are scaled to the window with bilinear filtering (SDL's default is nearest: blocky),
      // as ffplay and mpv do.
      SDL_SetHint(SDL_HINT_RENDER_SCALE_QUALITY, "linear")
      // SIGINT and SIGTERM stay the command's (a summary and exit 1), not SDL's quit event.
      SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
      // Without a display SDL falls back to drivers nobody sees (offscreen, KMS/DRM on a console): a
      // window there would play to no one. A display server is asked for by name, unless
      // SDL_VIDEODRIVER names a driver on purpose.
      let environment = ProcessInfo.processInfo.environment
      if environment["SDL_VIDEODRIVER"] == nil {
        let wayland = !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        guard wayland || !(environment["DISPLAY"] ?? "").isEmpty else {
          throw LoopError("no display (DISPLAY and WAYLAND_DISPLAY are unset)")
        }
        SDL_SetHint(SDL_HINT_VIDEODRIVER, wayland ? "wayland" : "x11")
      }
      guard SDL_InitSubSystem(UInt32(SDL_INIT_VIDEO)) == 0 else { throw LoopError(Self.sdlError()) }
      let centered = Int32(csdl_windowpos_centered())
      guard
        let window = SDL_CreateWindow(
          title, centered, centered, Int32(width), Int32(height),
          SDL_WINDOW_SHOWN.rawValue | SDL_WINDOW_RESIZABLE.rawValue)
      else {
        let message = Self.sdlError()
        SDL_QuitSubSystem(UInt32(SDL_INIT_VIDEO))
        throw LoopError(message)
      }
      guard
        let renderer = SDL_CreateRenderer(window, -1, 0)
          ?? SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue)
      else {
        let message = Self.sdlError()
        SDL_DestroyWindow(window)
        SDL_QuitSubSystem(UInt32(SDL_INIT_VIDEO))
        throw LoopError(message)
      }
      self.window = window
      self.renderer = renderer
      wakeEvent = SDL_RegisterEvents(1)
      updatePlacement()
      clear()
    }

    deinit {
      if let texture { SDL_DestroyTexture(texture) }
      SDL_DestroyRenderer(renderer)
      SDL_DestroyWindow(window)
      SDL_QuitSubSystem(UInt32(SDL_INIT_VIDEO))
    }

    struct LoopError: Error, CustomStringConvertible {
      let description: String
      init(_ description: String) { self.description = description }
    }

    static func sdlError() -> String { String(cString: SDL_GetError()) }

    func run() {
      var event = SDL_Event()
      while shared.withLock({ $0.running }) {
        if SDL_WaitEventTimeout(&event, 250) != 0 {
          handle(event)
          while SDL_PollEvent(&event) != 0 { handle(event) }
        }
        let (frame, caption, timelineChanged) = shared.withLock { state in
          defer { (state.pending, state.caption, state.timelineChanged) = (nil, nil, false) }
          return (state.pending, state.caption, state.timelineChanged)
        }
        if let caption { SDL_SetWindowTitle(window, caption) }
        if let frame {
          draw(frame)
        } else if timelineChanged {
          compose()
        }
      }
    }

    private func handle(_ event: SDL_Event) {
      switch event.type {
      case SDL_QUIT.rawValue:
        send(.quit)
      case SDL_WINDOWEVENT.rawValue:
        updatePlacement()
        compose()
      case SDL_KEYDOWN.rawValue:
        let key = UInt32(bitPattern: event.key.keysym.sym)
        switch key {
        case SDLK_q.rawValue, SDLK_ESCAPE.rawValue: send(.quit)
        case SDLK_SPACE.rawValue: send(.togglePause)
        case SDLK_LEFT.rawValue: send(.seek(seconds: -10))
        case SDLK_RIGHT.rawValue: send(.seek(seconds: 10))
        case SDLK_UP.rawValue: send(.seek(seconds: 60))
        case SDLK_DOWN.rawValue: send(.seek(seconds: -60))
        case SDLK_PLUS.rawValue, SDLK_EQUALS.rawValue, SDLK_KP_PLUS.rawValue: send(.changeSpeed(steps: 1))
        case SDLK_MINUS.rawValue, SDLK_KP_MINUS.rawValue: send(.changeSpeed(steps: -1))
        case SDLK_PERIOD.rawValue: send(.step(frames: 1))
        case SDLK_COMMA.rawValue: send(.step(frames: -1))
        case SDLK_s.rawValue: send(.snapshot)
        case SDLK_f.rawValue:
          fullscreen.toggle()
          SDL_SetWindowFullscreen(window, fullscreen ? SDL_WINDOW_FULLSCREEN_DESKTOP.rawValue : 0)
        default: break
        }
      default:
        break
      }
    }

    private func send(_ command: Command) {
      shared.withLock { $0.onCommand }?(command)
    }

    private func updatePlacement() {
      var (x, y, width, height): (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)
      SDL_GetWindowPosition(window, &x, &y)
      SDL_GetRendererOutputSize(renderer, &width, &height)
      shared.withLock { $0.placement = Placement(x: Int(x), y: Int(y), width: Int(width), height: Int(height)) }
    }

    private func clear() {
      SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
      SDL_RenderClear(renderer)
      SDL_RenderPresent(renderer)
    }

    /// Uploads `frame`'s planes and shows them letterboxed in the drawing area.
    private func draw(_ frame: DecodedFrame) {
      guard let format = frame.pixelFormat, [.yuv420p, .yuvj420p].contains(format) else {
        shared.withLock { $0.undrawn += 1 }
        return
      }
      let (width, height) = (frame.frame.width, frame.frame.height)
      if texture == nil || textureSize != (width, height) {
        if let texture { SDL_DestroyTexture(texture) }
        texture = SDL_CreateTexture(
          renderer, SDL_PIXELFORMAT_IYUV.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(width),
          Int32(height))
        textureSize = (width, height)
      }
      // An anamorphic picture (a 16:9 film in 4:3 pixels) is shown in its shape, not its pixels'.
      pixelAspect = frame.frame.pixelAspect
      guard let texture else { return }
      let uploaded = frame.frame.withPlanes { planes -> Bool in
        guard planes.count >= 3, let y = planes[0].row(0).baseAddress, let u = planes[1].row(0).baseAddress,
          let v = planes[2].row(0).baseAddress
        else { return false }
        return SDL_UpdateYUVTexture(
          texture, nil, y.assumingMemoryBound(to: UInt8.self), Int32(planes[0].stride),
          u.assumingMemoryBound(to: UInt8.self), Int32(planes[1].stride), v.assumingMemoryBound(to: UInt8.self),
          Int32(planes[2].stride)) == 0
      }
      guard uploaded else {
        shared.withLock { $0.undrawn += 1 }
        return
      }
      compose()
      shared.withLock {
        $0.drawn = Drawn(time: frame.time, duration: frame.duration, count: ($0.drawn?.count ?? 0) + 1)
        $0.lastFrame = frame
      }
    }

    /// Draws the picture uploaded last, letterboxed above the bar, and the bar; presents.
    private func compose() {
      var output: (width: Int32, height: Int32) = (0, 0)
      SDL_GetRendererOutputSize(renderer, &output.width, &output.height)
      let timeline = shared.withLock { $0.timeline }
      let bar = timeline == nil ? 0 : min(SDLWindow.barHeight, output.height / 4)
      let area = (width: output.width, height: output.height - bar)
      SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
      SDL_RenderClear(renderer)
      if let texture, textureSize.width > 0, textureSize.height > 0 {
        let shown = SDLWindow.fit(
          width: textureSize.width, height: textureSize.height, pixelAspect: pixelAspect,
          into: (Int(area.width), Int(area.height)))
        var target = SDL_Rect(
          x: Int32(shown.x), y: Int32(shown.y), w: Int32(shown.width), h: Int32(shown.height))
        SDL_RenderCopy(renderer, texture, nil, &target)
      }
      if let timeline, bar > 0 { drawBar(timeline, top: area.height, width: output.width, height: bar) }
      SDL_RenderPresent(renderer)
    }

    /// The range in dark grey, what was played in lighter grey, gaps in red, the position in white.
    private func drawBar(_ timeline: Timeline, top: Int32, width: Int32, height: Int32) {
      let span = Double(max(1, timeline.range.duration.microseconds))
      func x(_ time: MediaTime) -> Int32 {
        let offset = Double(time.microseconds - timeline.range.start.microseconds) / span
        return Int32((min(1, max(0, offset)) * Double(width)).rounded())
      }
      func fill(_ from: Int32, _ to: Int32, _ color: (UInt8, UInt8, UInt8)) {
        guard to > from else { return }
        SDL_SetRenderDrawColor(renderer, color.0, color.1, color.2, 255)
        var rect = SDL_Rect(x: from, y: top, w: to - from, h: height)
        SDL_RenderFillRect(renderer, &rect)
      }
      fill(0, width, (48, 48, 48))
      if let position = timeline.position { fill(0, x(position), (112, 112, 112)) }
      for gap in timeline.gaps { fill(x(gap.start), max(x(gap.end), x(gap.start) + 1), (200, 40, 40)) }
      if let position = timeline.position {
        let mark = min(max(0, x(position) - 1), width - 2)
        fill(mark, mark + 2, (255, 255, 255))
      }
    }
  }
}
