/// How the pictures a harness showed line up with the sound a speaker played: what a viewer would see
/// and hear together.
package struct LipSync: CustomStringConvertible {
  /// Pictures compared.
  package var frames = 0
  /// Of those, the ones whose media time a played audio frame holds.
  package var heard = 0
  /// The largest distance (µs) between the instant a picture was shown and the instant its media time
  /// was heard, and that picture's media time (µs).
  package var worst: (offset: Int64, media: Int64) = (0, 0)

  /// Pictures were shown, the sound holds at least 90 % of them, and each was heard within 1 ms of
  /// being seen.
  package var inStep: Bool { frames > 0 && heard * 10 >= frames * 9 && worst.offset <= 1_000 }

  /// Counts and the worst picture, for a failure's message.
  package var description: String {
    "\(frames) pictures, \(heard) heard, worst \(worst.offset) µs off at media \(worst.media)"
  }
}

extension ReplayHarness {
  /// The pictures of media time in `[start, end)` (µs) that `view` (the harness's own video output by
  /// default) showed after the first `shown`, against what `speaker` (the harness's own audio output by
  /// default) played.
  package func lipSync(
    of view: TimedRenderer? = nil, with speaker: TimedAudioDevice? = nil, from start: Int64, to end: Int64,
    since shown: Int = 0
  ) -> LipSync {
    let speaker = speaker ?? audio
    var sync = LipSync()
    for frame in (view ?? renderer).frames.dropFirst(shown) where frame.media >= start && frame.media < end {
      sync.frames += 1
      guard let heard = speaker.heard(at: frame.media) else { continue }
      sync.heard += 1
      let offset = abs(heard - frame.at)
      if offset > sync.worst.offset { sync.worst = (offset, frame.media) }
    }
    return sync
  }
}
