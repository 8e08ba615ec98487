import PipelineGraph

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
  /// be heard on `clock`, the device (if it holds nothing) starts it then (``align(nextFrameIn:)``), and,
  /// if it `steers`, `clock` follows when the device says it will be heard (``latency``). One device
  /// steers a clock: another one beside it (another channel's sound) is started in step and goes on at
  /// its own pace.
  public func play(
    _ frame: DecodedFrame, volume: Int, in timeline: PlaybackTimeline, following clock: SlewedClock,
    steers: Bool = true
  ) {
    let meant = clock.delay(until: timeline.instant(of: frame.time, track: frame.track, now: clock.now))
    align(nextFrameIn: meant)
    play(frame, volume: volume)
    // Set ahead at once, the clock leaves the pacers' timers late: they schedule their frames again.
    if steers, let latency, clock.follow(latency: latency, meant: meant, frame: frame.duration) {
      timeline.wakePacers()
    }
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
