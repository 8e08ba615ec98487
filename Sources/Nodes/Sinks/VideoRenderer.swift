import PipelineGraph
import Synchronization

/// What a Video Output draws into: the Linux stand-in for the seed's host view (`TiRtcPlatformView`).
///
/// `render` is called on the replay's executor, once per presented frame, in presentation order; it
/// must return quickly (copy what it needs, or keep the frame object, which owns its pixels). No
/// lifecycle: frames come whenever the output is bound and a play presents.
public protocol VideoRenderer: AnyObject, Sendable {
  /// Draws `frame`.
  func render(_ frame: DecodedFrame)
}

/// A renderer that draws nothing (a headless replay, `tipipe play`). Stateless: any thread.
public final class NullRenderer: VideoRenderer {
  /// Creates a null renderer.
  public init() {}
  /// Does nothing.
  public func render(_ frame: DecodedFrame) {}
}

/// A renderer that keeps what it was given: the frames' times, their count and the last frame (for
/// tests and snapshots).
///
/// No lifecycle; thread-safe (a lock guards what it keeps): render and read from any thread.
public final class FrameCaptureRenderer: VideoRenderer {
  private let state = Locked<(times: [MediaTimeMicroseconds], last: DecodedFrame?)>(([], nil))

  /// Media times in microseconds.
  public typealias MediaTimeMicroseconds = Int64

  /// Creates a capturing renderer.
  public init() {}

  /// Keeps the frame and its time.
  public func render(_ frame: DecodedFrame) {
    state.withLock {
      $0.times.append(frame.time.microseconds)
      $0.last = frame
    }
  }

  /// The media times of every frame rendered, in order.
  public var renderedTimes: [MediaTimeMicroseconds] { state.withLock { $0.times } }

  /// The last frame rendered.
  public var lastFrame: DecodedFrame? { state.withLock { $0.last } }
}

/// Where an Audio Output sends its samples: the Linux stand-in for the seed's audio route.
///
/// `play` is called on the replay's executor, once per frame presented at 1× (never at other speeds),
/// in presentation order; it must return quickly. No lifecycle.
public protocol AudioDevice: AnyObject, Sendable {
  /// Plays `frame` at `volume` (0...100; 0 is silence).
  func play(_ frame: DecodedFrame, volume: Int)

  /// How long from now until the frame played last starts to be heard (what the device holds before it,
  /// plus the wait for its own buffer; zero before anything was played); nil when the device does
  /// not know (the default). A device that knows when a play's graph is built gets its audio ahead of time
  /// and paces the play (an audio master clock: see `SlewedClock`).
  var latency: MediaDuration? { get }

  /// Stops consuming what it holds (`true`), or goes on (`false`): the play paused or resumed. The
  /// default does nothing.
  func setPaused(_ paused: Bool)

  /// Drops what it holds and has not played (a seek, a stop, a new play). The default does nothing.
  func flush()

  /// The next frame given is to be heard `delay` from now (negative: it is late by that much). A device
  /// that holds nothing and knows its timing starts it then: silence before it, or its late start
  /// skipped — the sound of a play, of a seek, starts in step with the picture instead of being
  /// steered there. Called before each frame; a device that holds sound ignores it. The default does
  /// nothing.
  func align(nextFrameIn delay: MediaDuration)
}

extension AudioDevice {
  /// Not known.
  public var latency: MediaDuration? { nil }
  /// Nothing to do.
  public func setPaused(_ paused: Bool) {}
  /// Nothing to do.
  public func flush() {}
  /// Nothing to do.
  public func align(nextFrameIn delay: MediaDuration) {}

  /// Plays `frame` at `volume` as the sound an audio master clock follows: when `timeline` means it to
  /// be heard on `clock`, the device (if it holds nothing) starts it then (``align(nextFrameIn:)``), and
  /// `clock` follows when the device says it will be heard (``latency``).
  public func play(_ frame: DecodedFrame, volume: Int, in timeline: PlaybackTimeline, following clock: SlewedClock) {
    let meant = clock.delay(until: timeline.instant(of: frame.time, track: frame.track, now: clock.now))
    align(nextFrameIn: meant)
    play(frame, volume: volume)
    if let latency { clock.follow(latency: latency, meant: meant, frame: frame.duration) }
  }
}

/// A device that consumes samples as they are presented (the pacer presents them in real time on the
/// pipeline clock) and plays nothing. Stateless: any thread.
public final class NullAudioDevice: AudioDevice {
  /// Creates a null device.
  public init() {}
  /// Does nothing.
  public func play(_ frame: DecodedFrame, volume: Int) {}
}

/// A device that records what it was asked to play (for tests).
///
/// No lifecycle; thread-safe (a lock guards what it records): play and read from any thread.
public final class CaptureAudioDevice: AudioDevice {
  private let state = Locked<[(time: Int64, samples: Int, volume: Int)]>([])

  /// Creates a capturing device.
  public init() {}

  /// Records the frame's time, sample count and volume.
  public func play(_ frame: DecodedFrame, volume: Int) {
    state.withLock { $0.append((frame.time.microseconds, frame.frame.sampleCount, volume)) }
  }

  /// What was played: media time (µs), samples and volume of each frame.
  public var played: [(time: Int64, samples: Int, volume: Int)] { state.withLock { $0 } }
}
