internal import CSDL2
import Foundation
import Nodes
import PipelineGraph

/// An Audio Output's device on the desktop: SDL2's audio (PulseAudio, PipeWire or ALSA; SDL's `disk`
/// driver writes what it plays to a file, for tests).
///
/// The device is opened at the first frame with that frame's rate and channels as 32-bit float, and
/// opened again when they change; each frame's samples are interleaved, scaled by the volume and queued
/// here. SDL's audio thread takes them a buffer at a time through a callback (`SampleFeed`), which
/// notes when it took the last one: so ``latency`` is when the frame queued last reaches the driver —
/// what is queued before it, after the buffer the driver plays now — not an average over the buffer's
/// phase (a 1024-sample buffer lasts 64 ms at 16 kHz). Frames come only at 1×, ahead of their time by
/// the replay's lead, and the replay's clock follows ``latency`` (the audio master clock), so the queue
/// neither runs dry nor grows. Pause plays silence and keeps what is queued; a seek or a stop drops it
/// (``flush()``). ``close()`` (or `deinit`) closes the device.
///
/// What the driver holds after SDL hands it a buffer (a sound server's own buffer) SDL2 does not say;
/// it is not counted. SDL's `disk` driver writes a buffer when it takes it: there the figure is exact.
public final class SDLAudioDevice: AudioDevice, @unchecked Sendable {
  /// Why there is no sound: no audio driver or device SDL can open; SDL's own words.
  public struct Unavailable: Error, CustomStringConvertible {
    /// What SDL said.
    public let description: String
  }

  private struct State {
    var device: SDL_AudioDeviceID = 0
    var feed: SampleFeed?
    var played = 0
    var paused = false
    var failure: String?
    var closed = false
    /// An alignment asked for the next frame (`delay` from `now`, µs), applied when it is queued: the
    /// device for its format may not be open yet.
    var alignment: (delay: MediaDuration, now: Int64)?
  }

  private let state = Locked(State())

  /// Starts SDL's audio (the driver SDL finds, or the one `SDL_AUDIODRIVER` names).
  /// - Throws: ``Unavailable`` when SDL has no audio driver here.
  public init() throws {
    // SIGINT and SIGTERM stay the process's, not SDL's quit event.
    SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
    guard SDL_InitSubSystem(UInt32(SDL_INIT_AUDIO)) == 0 else {
      throw Unavailable(description: "no sound: \(String(cString: SDL_GetError()))")
    }
  }

  deinit { close() }

  /// Sample frames queued so far (all channels of one instant count once).
  public var playedSamples: Int { state.withLock { $0.played } }

  /// Why the device stopped playing, if it did (it could not be opened for a format).
  public var failure: String? { state.withLock { $0.failure } }

  /// Queues `frame` at `volume` (0...100).
  public func play(_ frame: DecodedFrame, volume: Int) {
    frame.frame.withSamples { samples in
      guard let samples else { return }
      guard let feed = feed(rate: samples.sampleRate, channels: samples.channels) else { return }
      if let alignment = state.withLock({ state in
        defer { state.alignment = nil }; return state.alignment
      }) {
        feed.align(nextFrameIn: alignment.delay, now: alignment.now)
      }
      var interleaved = Self.interleave(samples)
      let gain = Float(max(0, min(100, volume))) / 100
      if gain != 1 { for index in interleaved.indices { interleaved[index] *= gain } }
      feed.append(interleaved, frames: samples.count)
      state.withLock { $0.played += samples.count }
    }
  }

  /// The feed of the device open for `rate` and `channels`, opening it (and closing the one open for
  /// another format) first; nil once closed or failed. SDL's calls that wait for its audio thread are
  /// made outside the lock, which the thread's callback takes.
  private func feed(rate: Int, channels: Int) -> SampleFeed? {
    let (current, old) = state.withLock { state -> (SampleFeed?, (SDL_AudioDeviceID, SampleFeed?)?) in
      guard !state.closed, state.failure == nil else { return (nil, nil) }
      if let feed = state.feed, (feed.rate, feed.channels) == (rate, channels) { return (feed, nil) }
      defer { (state.device, state.feed) = (0, nil) }
      return (nil, (state.device, state.feed))
    }
    if let current { return current }
    guard let old else { return nil }
    Self.close(old.0, feed: old.1)
    let feed = SampleFeed(rate: rate, channels: channels)
    var failure: String?
    let device = Self.open(feed: feed, failure: &failure)
    let orphan = state.withLock { state -> SDL_AudioDeviceID? in
      guard !state.closed else { return device }
      feed.paused = state.paused
      (state.device, state.feed, state.failure) = (device, device != 0 ? feed : nil, failure)
      return nil
    }
    if let orphan { Self.close(orphan, feed: feed) }
    return orphan == nil && device != 0 ? feed : nil
  }

  /// How long until the frame queued last reaches the driver: what is queued before it, after the
  /// buffer the driver took last has played; zero before the first frame opens a device (it holds
  /// nothing); nil once closed or failed.
  public var latency: MediaDuration? {
    let (playing, feed) = state.withLock { (!$0.closed && $0.failure == nil, $0.feed) }
    guard playing else { return nil }
    return feed?.latency(now: MonotonicClock.systemMicroseconds()) ?? .zero
  }

  /// Pauses or resumes the device, keeping what it holds (a paused play's sound stops at once and goes
  /// on from there; the driver plays silence meanwhile).
  public func setPaused(_ paused: Bool) {
    state.withLock { state in
      state.paused = paused
      state.feed?.paused = paused
    }
  }

  /// When nothing is queued, the next frame starts `delay` from now: silence before it, or as much of
  /// its start skipped when it is late.
  public func align(nextFrameIn delay: MediaDuration) {
    let now = MonotonicClock.systemMicroseconds()
    state.withLock { $0.alignment = (delay, now) }
  }

  /// Drops what is queued (a seek or a stop: the old sound is not heard after it).
  public func flush() {
    state.withLock { $0.feed }?.removeAll()
  }

  /// Closes the device (idempotent); what is queued is dropped.
  public func close() {
    let open = state.withLock { state -> (SDL_AudioDeviceID, SampleFeed?)? in
      guard !state.closed else { return nil }
      state.closed = true
      defer { (state.device, state.feed) = (0, nil) }
      return (state.device, state.feed)
    }
    guard let open else { return }
    Self.close(open.0, feed: open.1)
    SDL_QuitSubSystem(UInt32(SDL_INIT_AUDIO))
  }

  /// Closes `device` (SDL waits for its audio thread), keeping `feed`, which its callback reads, alive
  /// until then.
  private static func close(_ device: SDL_AudioDeviceID, feed: SampleFeed?) {
    guard device != 0 else { return }
    withExtendedLifetime(feed) { SDL_CloseAudioDevice(device) }
  }

  /// Opens a device playing `feed` (running at once: silence until samples are queued); returns it, 0
  /// on failure. Its callback reads `feed` unretained: keep `feed` until the device is closed.
  private static func open(feed: SampleFeed, failure: inout String?) -> SDL_AudioDeviceID {
    var wanted = SDL_AudioSpec()
    wanted.freq = Int32(feed.rate)
    wanted.format = SDL_AudioFormat(AUDIO_F32SYS)
    wanted.channels = UInt8(clamping: feed.channels)
    // A buffer of at most 64 ms (1024 samples from 16 kHz up, 512 at 8 kHz): the play hands sound over
    // 100 ms ahead, and a buffer longer than that would run dry. The driver may choose another size
    // (each take says its own).
    wanted.samples = feed.rate < 16_000 ? 512 : 1024
    wanted.callback = { userdata, stream, length in
      guard let userdata, let stream else { return }
      Unmanaged<SampleFeed>.fromOpaque(userdata).takeUnretainedValue().pull(into: stream, bytes: Int(length))
    }
    wanted.userdata = Unmanaged.passUnretained(feed).toOpaque()
    var obtained = SDL_AudioSpec()
    // The driver may take another buffer size (its own period); any other difference SDL converts.
    let device = SDL_OpenAudioDevice(nil, 0, &wanted, &obtained, SDL_AUDIO_ALLOW_SAMPLES_CHANGE)
    if device == 0 {
      failure =
        "cannot open an audio device for \(feed.rate) Hz, \(feed.channels) channels: \(String(cString: SDL_GetError()))"
      return 0
    }
    feed.bufferFrames = Int(obtained.samples)
    SDL_PauseAudioDevice(device, 0)
    return device
  }

  /// The samples as interleaved 32-bit floats in [-1, 1].
  private static func interleave(_ samples: AudioSamples) -> [Float] {
    let (channels, count) = (samples.channels, samples.count)
    var output = [Float](repeating: 0, count: channels * count)
    switch samples.layout {
    case .float:
      let all = samples.planes[0].bindMemory(to: Float.self)
      for index in 0..<min(output.count, all.count) { output[index] = all[index] }
    case .floatPlanar:
      for channel in 0..<min(channels, samples.planes.count) {
        let plane = samples.planes[channel].bindMemory(to: Float.self)
        for index in 0..<min(count, plane.count) { output[index * channels + channel] = plane[index] }
      }
    case .int16:
      let all = samples.planes[0].bindMemory(to: Int16.self)
      for index in 0..<min(output.count, all.count) { output[index] = Float(all[index]) / 32768 }
    case .int16Planar:
      for channel in 0..<min(channels, samples.planes.count) {
        let plane = samples.planes[channel].bindMemory(to: Int16.self)
        for index in 0..<min(count, plane.count) { output[index * channels + channel] = Float(plane[index]) / 32768 }
      }
    case .other:
      break  // silence: the decoders here make only these four layouts
    }
    return output
  }
}
