import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

/// The timeline's lock-free schedule (a pacer's copy of the published mapping) against the instant
/// computed under its lock, over random sequences of speed changes, pauses, gaps and frames.
@Suite struct PlaybackTimelineTests {
  /// Stands for a pacer: the timeline knows pacers by identity only.
  final class PacerIdentity {}

  static let rates = [(1, 8), (1, 4), (1, 2), (1, 1), (2, 1), (4, 1), (8, 1)].map {
    PlaybackRate(numerator: $0.0, denominator: $0.1)!
  }

  @Test("a frame's instant from the pacer's copy of the mapping is the one computed under the lock")
  func instantsWithoutTheLockAreTheLocked() throws {
    var generator = SeededGenerator(seed: fuzzSeed(0x7469_6D65))
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    var compared = 0
    for _ in 0..<200 {
      let timeline = PlaybackTimeline(tracks: [video, audio])
      let pacers = [PacerIdentity(), PacerIdentity()]
      // Readers made before anything happened: each must notice every change by itself.
      var readers = [timeline.reader(), timeline.reader()]
      var now = Int64(0)
      var scheduled: Set<Int> = []
      for _ in 0..<60 {
        now += Int64(generator.next() % 100_000)
        let instant = ClockInstant(microseconds: now)
        switch generator.next() % 4 {
        case 0:
          let rate = Self.rates[Int(generator.next() % UInt64(Self.rates.count))]
          timeline.apply(rate: rate, paused: generator.next() % 3 == 0, now: instant)
        case 1:
          let start = Int64(generator.next() % 60_000_000)
          let range = MediaRange(
            start: MediaTime(microseconds: start),
            end: MediaTime(microseconds: start + 1 + Int64(generator.next() % 5_000_000)))
          let tracks = [[video], [audio], [video, audio], []][Int(generator.next() % 4)]
          timeline.note(RecordingGap(range: range, tracks: tracks, reasons: [.notFound]))
        default:
          let index = Int(generator.next() % 2)
          let time = MediaTime(microseconds: Int64(generator.next() % 60_000_000))
          _ = timeline.schedule(
            of: time, track: index == 0 ? video : audio, now: instant, for: ObjectIdentifier(pacers[index]),
            reading: &readers[index])
          scheduled.insert(index)
        }
        for index in scheduled {
          let track = index == 0 ? video : audio
          let time = MediaTime(microseconds: Int64(generator.next() % 60_000_000))
          let free = timeline.schedule(
            of: time, track: track, now: instant, for: ObjectIdentifier(pacers[index]), reading: &readers[index])
          let locked = timeline.instant(of: time, track: track, now: instant)
          #expect(free == .at(locked), "\(track) at \(time), now \(now)")
          compared += 1
        }
      }
    }
    #expect(compared > 5_000)
  }
}
