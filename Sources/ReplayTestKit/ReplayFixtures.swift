import MediaSynthesis

/// The small synthetic recordings ReplayTestKit's harness plays by default, and the project's own tests.
package enum ReplayFixtures {
  /// The first instant (UTC ms) of the fixture recordings: 2026-11-30 00:00:00 UTC.
  package static let recordingStart: Int64 = 1_795_996_800_000

  /// `seconds` of a small, fast recording: 320×240 H.264 at 25 fps with 2 s groups of pictures in 3 s
  /// objects (so groups span objects), video on channel 0 and AAC on channel 1, fixed keys and IVs (a
  /// failure reproduces run after run).
  package static func options(seconds: Int = 9) -> LibrarySynthesizer.Options {
    var options = LibrarySynthesizer.Options()
    options.startMilliseconds = recordingStart
    options.durationSeconds = seconds
    options.segmentSeconds = 3
    options.width = 320
    options.height = 240
    options.fps = 25
    options.gop = 50
    options.seed = 0x7469_7069_7065
    return options
  }
}
