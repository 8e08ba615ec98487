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

  @Test("holes past the gaps a timeline keeps still count: it moves its anchor past the oldest, every instant kept")
  func manyHolesKeepEveryInstant() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    for rate in [PlaybackRate.normal, PlaybackRate(numerator: 4, denominator: 1)!] {
      let timeline = PlaybackTimeline(tracks: [video, audio], rate: rate)
      let second = { (s: Int64) in MediaTime(microseconds: s * 1_000_000) }
      // Anchored at media 0 at clock 0; both tracks keep time.
      _ = timeline.instant(of: second(0), track: video, now: ClockInstant(microseconds: 0))
      _ = timeline.instant(of: second(0), track: audio, now: ClockInstant(microseconds: 0))
      // 150 holes of 1 s (every 2 s): the gaps of both tracks, and some of every track at once.
      for k in Int64(0)..<150 {
        let range = MediaRange(start: second(2 * k + 1), end: second(2 * k + 2))
        if k % 3 == 0 {
          timeline.note(RecordingGap(range: range, tracks: [], reasons: [.notFound]))
        } else {
          timeline.note(RecordingGap(range: range, tracks: [video], reasons: [.notFound]))
          timeline.note(RecordingGap(range: range, tracks: [audio], reasons: [.notFound]))
        }
        // Media 2k + 2 s comes after k + 1 holes: (k + 1) s of media played, scaled by the rate.
        let played = MediaDuration.microseconds((k + 1) * 1_000_000)
        let expected = ClockInstant(microseconds: try played.scaled(by: rate).microseconds)
        #expect(timeline.instant(of: second(2 * k + 2), track: video, now: .zero) == expected, "hole \(k)")
        #expect(timeline.instant(of: second(2 * k + 2), track: audio, now: .zero) == expected, "hole \(k)")
      }
    }
  }

  @Test("a track added while playing counts as missing before it is judged: holes skipped already stay skipped")
  func aTrackAddedLate() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let timeline = PlaybackTimeline(tracks: [video])
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    _ = timeline.instant(of: at(0), track: video, now: .zero)
    timeline.note(
      RecordingGap(range: MediaRange(start: at(3000), end: at(5000)), tracks: [video], reasons: [.notFound]))
    #expect(timeline.instant(of: at(6000), track: video, now: .zero) == ClockInstant(microseconds: 4_000_000))
    timeline.add(audio, judgedFrom: at(6500))
    _ = timeline.instant(of: at(6000), track: audio, now: .zero)
    // Audio keeps time now: the old hole stays skipped; a later video gap alone is not a hole.
    #expect(timeline.instant(of: at(6000), track: video, now: .zero) == ClockInstant(microseconds: 4_000_000))
    timeline.note(
      RecordingGap(range: MediaRange(start: at(7000), end: at(8000)), tracks: [video], reasons: [.notFound]))
    #expect(timeline.instant(of: at(9000), track: video, now: .zero) == ClockInstant(microseconds: 7_000_000))
    timeline.note(
      RecordingGap(range: MediaRange(start: at(7000), end: at(8000)), tracks: [audio], reasons: [.notFound]))
    #expect(timeline.instant(of: at(9000), track: video, now: .zero) == ClockInstant(microseconds: 6_000_000))
  }
}
