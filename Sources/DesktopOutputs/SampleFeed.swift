import PipelineGraph

/// The samples an ``SDLAudioDevice`` has queued, which SDL's audio thread takes a buffer at a time
/// (``pull(into:bytes:now:)``, from the device's callback), and when it took the last buffer: what
/// makes the device's latency exact rather than an average over the buffer's phase.
///
/// Thread-safe: a lock guards it (the callback and the play take it; SDL calls that wait for the audio
/// thread are never made under it). Pause plays silence and keeps the queue; underrun plays silence.
final class SampleFeed: @unchecked Sendable {
  private struct State {
    var samples: [Float] = []
    /// Interleaved samples already taken from the front of `samples`.
    var head = 0
    /// Sample frames of the frame queued last, and how many of its first ones were left out (late).
    var lastFrames = 0
    var lastSkipped = 0
    /// When the audio thread took its last buffer (monotonic µs), nil before the first; the sample
    /// frames of that buffer, and how many of them were sound (the rest silence: paused or run dry).
    var lastPull: Int64?
    var bufferFrames = 1024
    var lastSound = 0
    var paused = false
    /// Sample frames of the last buffer before a pause that were heard after it.
    var heardAfterPause = 0
    /// Sample frames to leave out of the next frames appended (they came late).
    var skip = 0
  }

  /// The device's rate (Hz).
  let rate: Int
  /// The device's channels.
  let channels: Int
  private let state = Locked(State())

  /// A feed for `rate` and `channels`, empty.
  init(rate: Int, channels: Int) {
    self.rate = max(1, rate)
    self.channels = max(1, channels)
  }

  /// The sample frames of the device's buffer (what the audio thread takes at a time; each take says
  /// it again).
  var bufferFrames: Int {
    get { state.withLock { $0.bufferFrames } }
    set { state.withLock { $0.bufferFrames = max(1, newValue) } }
  }

  /// Silence and the queue kept (`true`), or the queue played (`false`).
  ///
  /// The buffer the driver took before a pause goes on playing into it (up to a buffer's length): the
  /// sound it holds is heard while the picture stands. On resume as much silence goes before the queue,
  /// so that the sound goes on where the picture does, not that far ahead of it.
  var paused: Bool {
    get { state.withLock { $0.paused } }
    set { setPaused(newValue, now: MonotonicClock.systemMicroseconds()) }
  }

  /// ``paused`` at `now` (monotonic µs).
  func setPaused(_ paused: Bool, now: Int64) {
    state.withLock { state in
      guard paused != state.paused else { return }
      state.paused = paused
      if paused {
        // The buffer's sound is at its start: what of it is still to play after `now`.
        let played = state.lastPull.map { Int(max(0, now - $0) * Int64(rate) / 1_000_000) } ?? state.lastSound
        state.heardAfterPause = max(0, state.lastSound - played)
      } else {
        // The queue's head is that far ahead of the picture; the driver takes it at its next buffer,
        // which it may be into already: the difference is silence, or sound skipped.
        let wait = Int((Self.nextPull(state, now: now, rate: rate) - now) * Int64(rate) / 1_000_000)
        let pad = state.heardAfterPause - wait
        state.heardAfterPause = 0
        if pad > 0 {
          state.samples.insert(contentsOf: repeatElement(Float(0), count: pad * channels), at: state.head)
        } else {
          state.head += min(-pad * channels, state.samples.count - state.head)
        }
      }
    }
  }

  /// Queues `interleaved`, a frame of `frames` sample frames (less its start, if
  /// ``align(nextFrameIn:now:)`` found it late).
  func append(_ interleaved: [Float], frames: Int) {
    state.withLock { state in
      if state.head > 0 && state.head >= state.samples.count / 2 {
        state.samples.removeFirst(state.head)
        state.head = 0
      }
      let skipped = min(state.skip, frames)
      state.skip -= skipped
      state.samples.append(contentsOf: interleaved[min(interleaved.count, skipped * channels)...])
      state.lastFrames = frames
      state.lastSkipped = skipped
    }
  }

  /// When nothing is queued, the next frame appended is to be heard `delay` from `now` (monotonic µs):
  /// silence is queued before it, or its late start is skipped (at most a second either way).
  func align(nextFrameIn delay: MediaDuration, now: Int64) {
    state.withLock { state in
      guard state.samples.count == state.head, !state.paused else { return }
      let offset =
        max(-1_000_000, min(1_000_000, delay.microseconds)) - (Self.nextPull(state, now: now, rate: rate) - now)
      let frames = Int(max(-1_000_000, min(1_000_000, offset)) * Int64(rate) / 1_000_000)
      state.skip = max(0, -frames)
      if frames > 0 { state.samples.append(contentsOf: repeatElement(Float(0), count: frames * channels)) }
    }
  }

  /// Drops what is queued.
  func removeAll() {
    state.withLock { state in
      state.samples.removeAll(keepingCapacity: true)
      state.head = 0
      state.lastFrames = 0
      state.lastSkipped = 0
      state.heardAfterPause = 0
      state.skip = 0
    }
  }

  /// How long from `now` (monotonic µs) until the frame queued last reaches the driver: the buffer the
  /// driver took last plays out, then what is queued before the frame. A frame whose start was left
  /// out (late) counts from where that start would have been: its instant, not its remainder's.
  func latency(now: Int64) -> MediaDuration {
    state.withLock { state in
      let queued = (state.samples.count - state.head) / channels
      let kept = state.lastFrames - state.lastSkipped
      let before = Int64(max(0, queued - kept) - state.lastSkipped)
      return .microseconds(Self.nextPull(state, now: now, rate: rate) - now + before * 1_000_000 / Int64(rate))
    }
  }

  /// When the driver takes its next buffer (monotonic µs): when the one it took last has played; at
  /// once before the first.
  private static func nextPull(_ state: State, now: Int64, rate: Int) -> Int64 {
    state.lastPull.map { max(now, $0 + Int64(state.bufferFrames) * 1_000_000 / Int64(rate)) } ?? now
  }

  /// Fills `bytes` bytes at `stream` with what is queued (silence while paused, and for what is
  /// missing): SDL's audio thread, a buffer at a time, at `now` (monotonic µs).
  func pull(into stream: UnsafeMutablePointer<UInt8>, bytes: Int, now: Int64 = MonotonicClock.systemMicroseconds()) {
    let wanted = bytes / MemoryLayout<Float>.size
    stream.withMemoryRebound(to: Float.self, capacity: wanted) { output in
      state.withLock { state in
        state.lastPull = now
        state.bufferFrames = max(1, wanted / channels)
        let available = state.paused ? 0 : min(wanted, state.samples.count - state.head)
        state.samples.withUnsafeBufferPointer { samples in
          for index in 0..<available { output[index] = samples[state.head + index] }
        }
        state.head += available
        state.lastSound = available / channels
        for index in available..<wanted { output[index] = 0 }
      }
    }
  }
}
