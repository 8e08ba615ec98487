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

  @Test("holes past the gaps a timeline keeps still count: it lets the oldest go as a sum, every instant kept")
  func manyHolesKeepEveryInstant() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let rates = [(1, 1), (4, 1), (8, 1), (1, 8), (2, 1)].map { PlaybackRate(numerator: $0.0, denominator: $0.1)! }
    let us = { (microseconds: Int64) in MediaTime(microseconds: microseconds) }
    // Holes of 0.7 s from 1.3 s into every 2 s: 150 of them, by the gaps of both tracks (a third of them
    // by gaps of every track at once).
    let hole = { (k: Int64) in MediaRange(start: us(2_000_000 * k + 1_300_000), end: us(2_000_000 * k + 2_000_000)) }
    for rate in rates {
      let timeline = PlaybackTimeline(tracks: [video, audio], rate: rate)
      _ = timeline.instant(of: us(0), track: video, now: .zero)
      _ = timeline.instant(of: us(0), track: audio, now: .zero)
      for k in Int64(0)..<150 {
        if k % 3 == 0 {
          timeline.note(RecordingGap(range: hole(k), tracks: [], reasons: [.notFound]))
        } else {
          timeline.note(RecordingGap(range: hole(k), tracks: [video], reasons: [.notFound]))
          timeline.note(RecordingGap(range: hole(k), tracks: [audio], reasons: [.notFound]))
        }
        // Just over 0.1 s after the hole: (k + 1) holes of 0.7 s skipped, scaled once (rounded once).
        let media = 2_000_000 * k + 2_100_003
        let expected = try MediaDuration.microseconds(media - (k + 1) * 700_000).scaled(by: rate)
        for track in [video, audio] {
          #expect(timeline.instant(of: us(media), track: track, now: .zero).microseconds == expected.microseconds)
        }
      }
      // A speed change and a pause after the oldest gaps were let go of: the play goes on from where it
      // is, the holes after it still skipped.
      let here = us(2_000_000 * 140 + 500_000)
      let now = timeline.instant(of: here, track: video, now: .zero)
      timeline.apply(rate: .normal, paused: false, now: now)
      #expect(timeline.instant(of: here, track: video, now: .zero) == now)
      let later = ClockInstant(microseconds: now.microseconds + 1_100_000)
      #expect(timeline.instant(of: us(here.microseconds + 1_800_000), track: video, now: .zero) == later)
      timeline.apply(rate: .normal, paused: true, now: now)
      timeline.apply(rate: .normal, paused: false, now: ClockInstant(microseconds: now.microseconds + 5_000_000))
      #expect(
        timeline.instant(of: us(here.microseconds + 1_800_000), track: audio, now: .zero).microseconds
          == later.microseconds + 5_000_000)
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
    timeline.add(audio, judgedFrom: at(6500), now: .zero)
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

  /// A timeline that follows a picture (channel 0) and a sound (channel 1), and the sound of channel 2,
  /// which it does not follow.
  static func followingPictureAndSound() -> (PlaybackTimeline, video: TrackID, audio: TrackID, other: TrackID) {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    return (PlaybackTimeline(tracks: [video, audio]), video, audio, TrackID(.audio, channel: 2))
  }

  @Test("before a followed track presents, a gap of one of them is no hole for another channel's frames")
  func anotherChannelBeforeTheFollowedOnes() throws {
    let (timeline, video, audio, other) = Self.followingPictureAndSound()
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    // After a seek into the picture's gap, the sound of a channel the timeline does not follow comes first.
    timeline.note(
      RecordingGap(range: MediaRange(start: at(5000), end: at(7000)), tracks: [video], reasons: [.notFound]))
    #expect(timeline.instant(of: at(5400), track: other, now: .zero) == .zero)
    #expect(timeline.instant(of: at(5464), track: other, now: .zero) == ClockInstant(microseconds: 64_000))
    // Where every followed track has a gap, it is a hole for it too.
    timeline.note(
      RecordingGap(range: MediaRange(start: at(6000), end: at(6500)), tracks: [audio], reasons: [.notFound]))
    #expect(timeline.instant(of: at(6600), track: other, now: .zero) == ClockInstant(microseconds: 700_000))
  }

  @Test("the first followed track presenting after another channel's frames: what played before keeps its instants")
  func theFirstFollowedTrackAfterAnotherChannel() throws {
    let (timeline, video, audio, other) = Self.followingPictureAndSound()
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    let clock = { (ms: Int64) in ClockInstant(microseconds: ms * 1000) }
    // The followed sound misses 5.0–5.3 s; the picture has media there but has not presented yet.
    timeline.note(
      RecordingGap(range: MediaRange(start: at(5000), end: at(5300)), tracks: [audio], reasons: [.notFound]))
    #expect(timeline.instant(of: at(5000), track: other, now: clock(0)) == clock(0))
    #expect(timeline.instant(of: at(5192), track: other, now: clock(192)) == clock(192))
    // At 200 ms the followed sound presents its first frame (5.3 s): 5.0–5.2 s played already and stays
    // where it was; only what is left of its gap (5.2–5.3 s) is skipped.
    #expect(timeline.instant(of: at(5300), track: audio, now: clock(200)) == clock(200))
    #expect(timeline.instant(of: at(5192), track: other, now: clock(200)) == clock(192))
    #expect(timeline.instant(of: at(5364), track: audio, now: clock(200)) == clock(264))
    // Once the picture presents too, its media (5.0–5.3 s) closes what was left of the hole.
    #expect(timeline.instant(of: at(5320), track: video, now: clock(210)) == clock(320))
  }

  @Test(
    "the only track that kept time retired before another followed one presented: that one keeps time from then on, nothing before moves"
  )
  func theOnlyKeeperRetires() throws {
    let (timeline, video, audio, other) = Self.followingPictureAndSound()
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    let clock = { (ms: Int64) in ClockInstant(microseconds: ms * 1000) }
    let gap = { (from: Int64, to: Int64, track: TrackID) in
      timeline.note(
        RecordingGap(range: MediaRange(start: at(from), end: at(to)), tracks: [track], reasons: [.notFound]))
    }
    // The picture plays alone (the sound has not presented): its gap is a hole.
    #expect(timeline.instant(of: at(0), track: video, now: .zero) == .zero)
    gap(1000, 2000, video)
    #expect(timeline.instant(of: at(3000), track: video, now: .zero) == clock(2000))
    gap(4000, 5000, audio)
    // The picture leaves at 3 s, before a sound frame played: after that only the sound's gap is a hole
    // (before, everything after the picture's retirement was one: the sound's frames came all at once).
    timeline.retire(video, from: at(3000), now: clock(2000))
    #expect(timeline.instant(of: at(2500), track: other, now: clock(2000)) == clock(1500))
    #expect(timeline.instant(of: at(6000), track: other, now: clock(2000)) == clock(4000))
    // The sound's first frame comes half a second late: it plays at once, and nothing after it moves (the
    // sound kept time from the retirement on already).
    #expect(timeline.instant(of: at(3000), track: audio, now: clock(2500)) == clock(2000))
    #expect(timeline.instant(of: at(4000), track: audio, now: clock(2500)) == clock(3000))
    #expect(timeline.instant(of: at(6000), track: audio, now: clock(3000)) == clock(4000))
    // Nothing before the handover moved (the picture's hole stays skipped).
    #expect(timeline.instant(of: at(2500), track: other, now: clock(4000)) == clock(1500))
  }

  @Test("a retired track no longer holds holes back from its retirement on; before it nothing moves; it may return")
  func aTrackRetired() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let timeline = PlaybackTimeline(tracks: [video, audio])
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    let gap = { (from: Int64, to: Int64, track: TrackID) in
      let range = MediaRange(start: at(from), end: at(to))
      timeline.note(RecordingGap(range: range, tracks: [track], reasons: [.notFound]))
    }
    _ = timeline.instant(of: at(0), track: video, now: .zero)
    _ = timeline.instant(of: at(0), track: audio, now: .zero)
    // A hole of both tracks before the retirement is skipped; a video gap alone there is not.
    gap(1000, 2000, video)
    gap(1000, 2000, audio)
    gap(3000, 4000, video)
    #expect(timeline.instant(of: at(5000), track: video, now: .zero) == ClockInstant(microseconds: 4_000_000))
    timeline.retire(audio, from: at(4500), now: .zero)
    // Nothing before the retirement moved; a video gap after it is a hole now (2 s of media lie in holes).
    #expect(timeline.instant(of: at(5000), track: video, now: .zero) == ClockInstant(microseconds: 4_000_000))
    gap(6000, 7000, video)
    #expect(timeline.instant(of: at(8000), track: video, now: .zero) == ClockInstant(microseconds: 6_000_000))
    // Back from 9 s on: a video gap after that is no hole while the audio has media there.
    timeline.add(audio, judgedFrom: at(9000), now: .zero)
    #expect(timeline.instant(of: at(8000), track: video, now: .zero) == ClockInstant(microseconds: 6_000_000))
    gap(8500, 9500, video)
    #expect(timeline.instant(of: at(10_000), track: video, now: .zero) == ClockInstant(microseconds: 7_500_000))
    // Retired again, then a flush: the playback goes on without it (a video gap alone is a hole).
    timeline.retire(audio, from: at(10_000), now: .zero)
    timeline.reset()
    #expect(!timeline.tracks.contains(audio))
    _ = timeline.instant(of: at(20_000), track: video, now: .zero)
    // Back after the flush it is a track added late: missing until its gaps are known (25 s).
    timeline.add(audio, judgedFrom: at(25_000), now: .zero)
    _ = timeline.instant(of: at(20_000), track: audio, now: .zero)
    gap(21_000, 22_000, video)
    #expect(timeline.instant(of: at(23_000), track: video, now: .zero) == ClockInstant(microseconds: 2_000_000))
    gap(26_000, 27_000, video)
    #expect(timeline.instant(of: at(28_000), track: video, now: .zero) == ClockInstant(microseconds: 7_000_000))
  }

  @Test(
    "a track retired while the others' gap plays is retired from what plays then: what follows is not put in the past")
  func aTrackRetiredInsideAGap() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let timeline = PlaybackTimeline(tracks: [video, audio])
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    _ = timeline.instant(of: at(0), track: video, now: .zero)
    _ = timeline.instant(of: at(0), track: audio, now: .zero)
    timeline.note(
      RecordingGap(range: MediaRange(start: at(3000), end: at(5000)), tracks: [video], reasons: [.notFound]))
    // At 4 s of clock the sound of 4 s plays (the picture of 3 s stands); the position says 2.96 s.
    let now = ClockInstant(microseconds: 4_000_000)
    timeline.retire(audio, from: at(2960), now: now)
    // Only the rest of the gap is skipped: the picture of 5 s comes now, not a second ago.
    #expect(timeline.instant(of: at(5000), track: video, now: now) == now)
    #expect(timeline.instant(of: at(2000), track: video, now: now) == ClockInstant(microseconds: 2_000_000))
  }

  @Test("a track added late whose first frame comes after the others went into a hole keeps that hole skipped")
  func aTrackAddedLateComesAfterAHole() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let timeline = PlaybackTimeline(tracks: [video])
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    _ = timeline.instant(of: at(0), track: video, now: .zero)
    timeline.add(audio, judgedFrom: at(2000), now: .zero)
    timeline.note(
      RecordingGap(range: MediaRange(start: at(3000), end: at(5000)), tracks: [video], reasons: [.notFound]))
    // The audio keeps no time yet: the picture skips the hole and shows 5 s at 3 s.
    #expect(timeline.instant(of: at(5000), track: video, now: .zero) == ClockInstant(microseconds: 3_000_000))
    // Its first frame comes at 3.5 s (5.5 s plays): what was skipped stays skipped, nothing moves back.
    let now = ClockInstant(microseconds: 3_500_000)
    #expect(timeline.instant(of: at(5500), track: audio, now: now) == now)
    #expect(timeline.instant(of: at(6000), track: video, now: now) == ClockInstant(microseconds: 4_000_000))
    // After it, a video gap alone is no hole: the audio keeps time there.
    timeline.note(
      RecordingGap(range: MediaRange(start: at(7000), end: at(8000)), tracks: [video], reasons: [.notFound]))
    #expect(timeline.instant(of: at(9000), track: video, now: now) == ClockInstant(microseconds: 7_000_000))
  }

  @Test("a track that presents already, judged in another's stead after a hole was skipped, keeps the hole skipped")
  func aPresentingTrackTakesOver() throws {
    let video = TrackID(.video, channel: 0)
    let first = TrackID(.audio, channel: 1)
    let second = TrackID(.audio, channel: 2)
    let timeline = PlaybackTimeline(tracks: [video, first])
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    let gap = { (from: Int64, to: Int64, track: TrackID) in
      let range = MediaRange(start: at(from), end: at(to))
      timeline.note(RecordingGap(range: range, tracks: [track], reasons: [.notFound]))
    }
    // The second sound plays beside the judged tracks, its frames at the same instants.
    for track in [video, first, second] { _ = timeline.instant(of: at(0), track: track, now: .zero) }
    gap(3000, 5000, video)
    gap(3000, 5000, first)
    #expect(timeline.instant(of: at(5000), track: video, now: .zero) == ClockInstant(microseconds: 3_000_000))
    // At 3.2 s of clock 5.2 s plays; the position (the last picture before the hole) says 2.96 s. The
    // second sound has media in the hole: judged from the position, it would put the hole back.
    let now = ClockInstant(microseconds: 3_200_000)
    timeline.add(second, judgedFrom: at(2960), now: now)
    timeline.retire(first, from: at(2960), now: now)
    #expect(timeline.instant(of: at(5000), track: video, now: now) == ClockInstant(microseconds: 3_000_000))
    #expect(timeline.instant(of: at(6000), track: video, now: now) == ClockInstant(microseconds: 4_000_000))
    // After it, it keeps time: a video gap alone is no hole, one of both is.
    gap(7000, 8000, video)
    #expect(timeline.instant(of: at(9000), track: video, now: now) == ClockInstant(microseconds: 7_000_000))
    gap(7000, 8000, second)
    #expect(timeline.instant(of: at(9000), track: video, now: now) == ClockInstant(microseconds: 6_000_000))
  }

  @Test("a late track's first frame at a hole's start exactly keeps the hole; a retirement before it stays one")
  func aTrackAddedLateAtAHolesStart() throws {
    let video = TrackID(.video, channel: 0)
    let audio = TrackID(.audio, channel: 1)
    let at = { (ms: Int64) in MediaTime(microseconds: ms * 1000) }
    let gap = { (timeline: PlaybackTimeline, from: Int64, to: Int64) in
      let range = MediaRange(start: at(from), end: at(to))
      timeline.note(RecordingGap(range: range, tracks: [video], reasons: [.notFound]))
    }
    let timeline = PlaybackTimeline(tracks: [video])
    _ = timeline.instant(of: at(0), track: video, now: .zero)
    timeline.add(audio, judgedFrom: at(1000), now: .zero)
    gap(timeline, 3000, 5000)
    // At 3 s the hole starts: the picture of 5 s is due now (and may be shown).
    let now = ClockInstant(microseconds: 3_000_000)
    #expect(timeline.instant(of: at(5000), track: video, now: now) == now)
    _ = timeline.instant(of: at(3000), track: audio, now: now)
    #expect(timeline.instant(of: at(5000), track: video, now: now) == now)
    // Retired before its first frame, the track comes back from 4 s: the retirement was still one.
    let other = PlaybackTimeline(tracks: [video])
    _ = other.instant(of: at(0), track: video, now: .zero)
    other.add(audio, judgedFrom: at(1000), now: .zero)
    other.retire(audio, from: at(2000), now: .zero)
    _ = other.instant(of: at(2500), track: audio, now: ClockInstant(microseconds: 2_500_000))
    other.add(audio, judgedFrom: at(4000), now: .zero)
    gap(other, 5000, 6000)
    #expect(other.instant(of: at(7000), track: video, now: .zero) == ClockInstant(microseconds: 7_000_000))
  }
}
