internal import CSDL2
import Foundation
import Nodes
import PipelineGraph

/// An Audio Output's device on the desktop: SDL2's audio (PulseAudio, PipeWire or ALSA; SDL's `disk`
/// driver writes what it plays to a file, for tests).
///
/// The device is opened at the first frame with that frame's rate and channels as 32-bit float, and
/// opened again when they change; each frame's samples are interleaved, scaled by the volume and queued
/// (`SDL_QueueAudio`: SDL's audio thread pulls them at the device's pace). Frames come only at 1×,
/// ahead of their time by the replay's lead (the device says how long it holds: ``latency``, which the
/// replay's clock follows), so the queue neither runs dry nor grows. Pause stops the device where it
/// is; a seek or a stop drops what it holds (``flush()``). ``close()`` (or `deinit`) closes the device.
public final class SDLAudioDevice: AudioDevice, @unchecked Sendable {
  /// Why there is no sound: no audio driver or device SDL can open; SDL's own words.
  public struct Unavailable: Error, CustomStringConvertible {
    /// What SDL said.
    public let description: String
  }

  private struct State {
    var device: SDL_AudioDeviceID = 0
    var format = (rate: 0, channels: 0)
    /// The sample frames of SDL's own buffer, which it fills from the queue at once.
    var bufferSamples = 0
    /// The sample frames of the frame played last.
    var lastSamples = 0
    var played = 0
    var started = false
    var paused = false
    var failure: String?
    var closed = false
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
      state.withLock { state in
        guard !state.closed, state.failure == nil else { return }
        if state.format != (samples.sampleRate, samples.channels) {
          if state.device != 0 { SDL_CloseAudioDevice(state.device) }
          let (device, buffer) = Self.open(
            rate: samples.sampleRate, channels: samples.channels, failure: &state.failure)
          state.device = device
          state.bufferSamples = buffer
          state.format = (samples.sampleRate, samples.channels)
          state.started = false
        }
        guard state.device != 0 else { return }
        var interleaved = Self.interleave(samples)
        let gain = Float(max(0, min(100, volume))) / 100
        if gain != 1 { for index in interleaved.indices { interleaved[index] *= gain } }
        interleaved.withUnsafeBytes { bytes in
          _ = SDL_QueueAudio(state.device, bytes.baseAddress, UInt32(bytes.count))
        }
        // Started once something is queued: the device's first buffer is this frame, not silence.
        if !state.started {
          if !state.paused { SDL_PauseAudioDevice(state.device, 0) }
          state.started = true
        }
        state.played += samples.count
        state.lastSamples = samples.count
      }
    }
  }

  /// How long until the frame queued last starts to be heard: what is queued before it, plus half of
  /// SDL's buffer (which SDL fills from the queue a buffer at a time); zero before the first frame opens
  /// a device (it holds nothing); nil once closed or failed.
  public var latency: MediaDuration? {
    state.withLock { state -> MediaDuration? in
      guard !state.closed, state.failure == nil else { return nil }
      guard state.device != 0, state.format.rate > 0 else { return .zero }
      let bytesPerSample = 4 * max(1, state.format.channels)
      let queued = Int(SDL_GetQueuedAudioSize(state.device)) / bytesPerSample
      let waiting = max(0, queued - state.lastSamples) + state.bufferSamples / 2
      return .microseconds(Int64(waiting) * 1_000_000 / Int64(state.format.rate))
    }
  }

  /// Pauses or resumes the device, keeping what it holds (a paused play's sound stops at once and goes
  /// on from there).
  public func setPaused(_ paused: Bool) {
    state.withLock { state in
      guard state.paused != paused, !state.closed else { return }
      state.paused = paused
      if state.device != 0 && state.started { SDL_PauseAudioDevice(state.device, paused ? 1 : 0) }
    }
  }

  /// Drops what is queued (a seek or a stop: the old sound is not heard after it).
  public func flush() {
    state.withLock { state in
      guard state.device != 0, !state.closed else { return }
      SDL_ClearQueuedAudio(state.device)
    }
  }

  /// Closes the device (idempotent); what is queued is dropped.
  public func close() {
    let device = state.withLock { state -> SDL_AudioDeviceID? in
      guard !state.closed else { return nil }
      state.closed = true
      return state.device
    }
    guard let device else { return }
    if device != 0 { SDL_CloseAudioDevice(device) }
    SDL_QuitSubSystem(UInt32(SDL_INIT_AUDIO))
  }

  /// Opens a device for `rate` and `channels`; returns it (0 on failure) and its buffer's sample frames.
  private static func open(rate: Int, channels: Int, failure: inout String?) -> (SDL_AudioDeviceID, Int) {
    var wanted = SDL_AudioSpec()
    wanted.freq = Int32(rate)
    wanted.format = SDL_AudioFormat(AUDIO_F32SYS)
    wanted.channels = UInt8(clamping: channels)
    wanted.samples = 1024
    var obtained = SDL_AudioSpec()
    // No changes allowed: SDL converts to what the device takes.
    let device = SDL_OpenAudioDevice(nil, 0, &wanted, &obtained, 0)
    if device == 0 {
      failure = "cannot open an audio device for \(rate) Hz, \(channels) channels: \(String(cString: SDL_GetError()))"
    }
    return (device, Int(obtained.samples))
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
