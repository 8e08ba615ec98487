import PipelineGraph
import Synchronization

/// The one clock anchor that the ``Pacer``s of one playback share, so that audio and video frames of
/// the same media time are presented at the same instant, whichever branch's first frame came first.
///
/// Media time `t` is presented at `anchorClock + (t − anchorMedia − skipped) / rate`, where `skipped`
/// is how much of `[anchorMedia, t)` lies in holes. The first frame of any branch sets the anchor; pause
/// freezes it (the wait is added on resume); a speed change re-anchors at the position playing at that
/// instant. A *hole* is a stretch where every track the playback presents has a gap (the
/// ``GapDetector`` sends one gap event per track): it is skipped, not waited through. A gap of some
/// tracks only skips nothing: the others keep the time, and the track that resumes after its gap is
/// presented in step with them. Once one of them has presented, a track that has presented nothing yet
/// (a channel without media) keeps no time: it does not count; before, every one counts (a frame of a
/// channel the playback does not follow is not rushed through a gap of one of them). (A track whose media stops has a gap only once the detector knows its
/// end; a hole of the other tracks inside it is waited through until then — at most what the edges
/// before the pacers hold.)
///
/// The anchor waits for the first frame of every pacer that prerolls (GStreamer's preroll, ExoPlayer's
/// renderers becoming ready): the first frame offered holds until every other such pacer has offered
/// one, or has been excused (a gap or the end before any frame, or a muted audio pacer), at most
/// ``prerollLimit`` of clock time; the anchor is then the earliest of the offered times at that instant.
/// So a branch that takes longer to decode its first frame (video decoding from the keyframe before a
/// seek target) holds the others back instead of being presented late and catching up.
///
/// Control reaches each pacer on its own executor; the timeline applies a change once (the first pacer
/// to apply it), at that pacer's clock instant: ``apply(rate:paused:now:)`` is idempotent. A hole found
/// late (a branch already holds a frame after it) wakes every pacer to reschedule (``version``).
/// Thread-safe: a lock guards it, and pacers on different executors share it. A frame's instant once
/// the anchor is set takes no lock: each change publishes the mapping (anchor, rate, pause, holes) and a
/// pacer computes from its ``Reader``'s copy, read again only after a change (atomic loads per frame).
public final class PlaybackTimeline: Sendable {
  private struct State {
    /// The tracks the playback presents.
    var tracks: Set<TrackID>
    var rate: PlaybackRate
    var paused: Bool
    var pausedAt: ClockInstant?
    /// Media time `anchor.media` is presented at `anchor.clock`.
    var anchor: (clock: ClockInstant, media: MediaTime)?
    /// Skipped stretches.
    var skips = Skips()
    /// The gaps of each track since the anchor, at most ``keptGaps`` (to find where all tracks have one).
    var gaps: [TrackID: [MediaRange]] = [:]
    /// Gaps of every track at once.
    var everywhere: [MediaRange] = []
    /// Where tracks that came or went while the playback ran count as missing, whatever their gaps
    /// (a track added late, before its gaps are known): the holes skipped before such a change stay
    /// skipped, and no instant before it moves. An entry, even empty, marks a track that came or went.
    var unjudged: [TrackID: [MediaRange]] = [:]
    /// Where retired tracks count as missing from, to the end (until they return).
    var retiredFrom: [TrackID: MediaTime] = [:]
    /// Tracks the playback presents that had presented nothing when the first of them did, after a frame
    /// of another channel: they count up to what played then (as every one did until then: the holes
    /// behind it stay what they were), as missing after, until their own first frame.
    var countedUntil: [TrackID: MediaTime] = [:]
    /// The tracks that have presented a frame.
    var active: Set<TrackID> = []
    /// The pacers, in the order they registered (the order they are woken in: a dictionary's order
    /// followed the objects' addresses, and which pacer presented first after a wake changed from run to
    /// run): how to wake each, and whether the anchor waits for its first frame (kept across a reset:
    /// each pacer says so as it arms).
    var pacers: [(id: ObjectIdentifier, wake: Completion<Void>, prerolls: Bool)] = []
    /// Each registered pacer's wake but `except`'s, in order.
    func wakes(except: ObjectIdentifier? = nil) -> [Completion<Void>] {
      pacers.compactMap { $0.id == except ? nil : $0.wake }
    }
    /// Before the anchor: the first time each pacer offered, the pacers excused, and when the first
    /// frame was offered.
    var offers: [ObjectIdentifier: MediaTime] = [:]
    var excused: Set<ObjectIdentifier> = []
    var prerollSince: ClockInstant?
    /// The mapping last published.
    var published: Mapping
    /// Set under the lock when ``version`` must change; bumped after the mapping is published, so that a
    /// pacer that sees the new version reads the new mapping.
    var bump = false
  }

  /// What a frame's instant depends on once the anchor is set: what ``Reader`` copies.
  struct Mapping: Sendable, Equatable {
    var rate: PlaybackRate
    var paused: Bool
    var pausedAt: ClockInstant?
    var anchor: Anchor?
    var skips: Skips
    var active: Set<TrackID>
  }

  /// What is skipped of the media after the anchor: the holes, and the length of those let go of
  /// (ending at or before `floor`), so that a long play keeps a bounded list and every instant.
  struct Skips: Sendable, Equatable {
    /// Skipped stretches, in order, disjoint (those that end after `floor`).
    var holes: [MediaRange] = []
    /// Holes that end at or before it were let go of; `before` µs of them lay after the anchor.
    var floor: MediaTime?
    var before: Int64 = 0

    /// µs of holes in `[anchor, time)`. Of those let go of only the sum is known: a time before the
    /// floor counts none of them (frames that old are not scheduled any more).
    func skipped(after anchor: MediaTime, until time: MediaTime) -> Int64 {
      var from = anchor
      var total: Int64 = 0
      if let floor, floor > anchor {
        guard time >= floor else { return 0 }
        total = before
        from = floor
      }
      for hole in holes where hole.end > from && hole.start < time {
        total = Skips.sum(total, Skips.span(max(hole.start, from), min(hole.end, time)))
      }
      return total
    }

    /// The media time `played` µs of presented media after `start` (the anchor), holes not counted.
    func position(after played: Int64, from start: MediaTime) -> MediaTime {
      var position = start
      var remaining = max(0, played)
      if let floor, floor > start {
        let untilFloor = Skips.span(start, floor) - before
        guard remaining >= untilFloor else { return MediaTime(microseconds: Skips.sum(start.microseconds, remaining)) }
        remaining -= untilFloor
        position = floor
      }
      for hole in holes where hole.end > position {
        let until = Skips.span(position, max(hole.start, position))
        if until >= remaining { break }
        remaining -= until
        position = hole.end
      }
      return MediaTime(microseconds: Skips.sum(position.microseconds, remaining))
    }

    /// Re-anchored at `media`: what was let go of before it no longer counts.
    mutating func rebase(at media: MediaTime) {
      guard let floor, media >= floor else { return }
      self.floor = nil
      before = 0
    }

    /// µs from `start` to `end`, saturating at Int64's limits.
    static func span(_ start: MediaTime, _ end: MediaTime) -> Int64 {
      let (difference, overflow) = end.microseconds.subtractingReportingOverflow(start.microseconds)
      return overflow ? (end > start ? .max : .min) : difference
    }

    /// `a + b`, saturating at Int64's limits.
    static func sum(_ a: Int64, _ b: Int64) -> Int64 {
      let (total, overflow) = a.addingReportingOverflow(b)
      return overflow ? (b > 0 ? .max : .min) : total
    }
  }

  /// Media time `media` is presented at `clock`.
  struct Anchor: Sendable, Equatable {
    var clock: ClockInstant
    var media: MediaTime
  }

  /// One pacer's copy of the timeline's mapping, read again only when it changed: keep one per pacer, on
  /// its executor (not shared between threads).
  public struct Reader {
    fileprivate var mapping: Published<Mapping>.Reader
  }

  /// A reader of this timeline's mapping, for ``schedule(of:track:now:for:reading:)``.
  public func reader() -> Reader { Reader(mapping: published.reader()) }

  /// When a pacer may present a frame.
  public enum Schedule: Sendable, Equatable {
    /// At this clock instant (in the past: late).
    case at(ClockInstant)
    /// Not yet: the other pacers' first frames are awaited until this instant at the latest.
    case awaitingPreroll(until: ClockInstant)
  }

  /// The longest a first frame waits for the other pacers' first frames.
  public static let prerollLimit = MediaDuration.microseconds(500_000)

  /// The tracks the playback presents: a stretch that is a gap of all of them is a hole.
  public var tracks: Set<TrackID> { state.withLock { $0.tracks } }
  private let state: Locked<State>
  /// Bumped (under the lock) when a hole is found or the anchor is set; read without it, per frame.
  private let changes = Atomic(0)
  /// The mapping as of the last change, for frames scheduled without the lock.
  private let published: Published<Mapping>

  /// How much later than its anchoring frame the clock of a play (or of a seek) starts while playing
  /// above 1× (a Replay mutes its sound there): the first picture is shown at once (``Pacer``), the next ones
  /// from this much later. A decoder's first frames come irregularly (a new context, its threads and
  /// pool, the edge empty): at 8× a frame lasts 5 ms, and the second one came 10–12 ms after the first
  /// (one frame late or dropped in 6 of 10 runs of 1080p on one core). ExoPlayer starts its clock once
  /// its renderers are ready; GStreamer's sinks add their latency. Zero: the clock starts at the first
  /// frame.
  public let startLatency: MediaDuration
  /// The ``startLatency`` of a player's timeline (the Replay, `tipipe play`): 20 ms, four frames' time
  /// at 8×.
  public static let playerStartLatency = MediaDuration.microseconds(20_000)

  /// A timeline for a playback of `tracks` (empty: every gap is a hole) at `rate`, `paused` or not, whose
  /// clock starts `startLatency` after its first frame.
  public init(
    tracks: Set<TrackID> = [], rate: PlaybackRate = .normal, paused: Bool = false,
    startLatency: MediaDuration = .zero
  ) {
    // At most the preroll's limit: a start is not held longer than a preroll (and no sum overflows).
    self.startLatency = min(max(.zero, startLatency), Self.prerollLimit)
    let mapping = Mapping(rate: rate, paused: paused, skips: Skips(), active: [])
    state = Locked(State(tracks: tracks, rate: rate, paused: paused, published: mapping))
    published = Published(mapping)
  }

  /// Runs `body` under the lock, then publishes the mapping if it changed, then bumps ``version`` if
  /// `body` asked (in that order: see ``State/bump``).
  private func mutate<Result>(_ body: (inout State) -> Result) -> Result {
    state.withLock { state in
      let result = body(&state)
      let mapping = Mapping(
        rate: state.rate, paused: state.paused, pausedAt: state.pausedAt,
        anchor: state.anchor.map { Anchor(clock: $0.clock, media: $0.media) }, skips: state.skips,
        active: state.active)
      if mapping != state.published {
        state.published = mapping
        published.publish(mapping)
      }
      if state.bump {
        state.bump = false
        changes.add(1, ordering: .releasing)
      }
      return result
    }
  }

  /// Changes whenever the mapping changes for a reason other than a control call (a hole found).
  public var version: Int { changes.load(ordering: .acquiring) }

  /// Applies a speed and pause state at `now` (once: later calls with the same values change nothing).
  public func apply(rate: PlaybackRate, paused: Bool, now: ClockInstant) {
    mutate { state in
      if rate != state.rate, let anchor = state.anchor {
        // Re-anchor at the position playing at the reference instant.
        let reference = state.pausedAt ?? now
        let position = Self.playing(at: reference, anchor: anchor, state)
        state.anchor = (reference, position)
        state.skips.rebase(at: position)
      }
      state.rate = rate
      if paused && !state.paused {
        state.pausedAt = now
      } else if !paused && state.paused {
        if let pausedAt = state.pausedAt, let anchor = state.anchor {
          let waited = now.microseconds - pausedAt.microseconds
          state.anchor = (ClockInstant(microseconds: anchor.clock.microseconds + waited), anchor.media)
        }
        state.pausedAt = nil
      }
      state.paused = paused
    }
  }

  /// The media time that plays at `instant` (the anchor's, before it), as the mapping stands.
  private static func playing(
    at instant: ClockInstant, anchor: (clock: ClockInstant, media: MediaTime), _ state: State
  ) -> MediaTime {
    let elapsed = MediaDuration.microseconds(instant.microseconds - anchor.clock.microseconds)
    let inverse = PlaybackRate(numerator: state.rate.denominator, denominator: state.rate.numerator)!
    let played = (try? elapsed.scaled(by: inverse)) ?? .zero
    return state.skips.position(after: played.microseconds, from: anchor.media)
  }

  /// The clock instant at which a frame of `track` at media time `time` is presented; the first frame
  /// sets the anchor at `now` (at the instant of the pause, while paused; ``startLatency`` after `now`
  /// while playing above 1×).
  public func instant(of time: MediaTime, track: TrackID, now: ClockInstant) -> ClockInstant {
    let (instant, wakes) = mutate { state -> (ClockInstant, [Completion<Void>]) in
      locked(instantOf: time, track: track, now: now, &state)
    }
    for wake in wakes { wake(()) }
    return instant
  }

  /// ``instant(of:track:now:)`` under the lock; returns the pacers to wake.
  private func locked(instantOf time: MediaTime, track: TrackID, now: ClockInstant, _ state: inout State)
    -> (ClockInstant, [Completion<Void>])
  {
    var wakes: [Completion<Void>] = []
    let handover = Self.handover(state)
    if state.active.insert(track).inserted {
      if let handover, state.tracks.contains(track) {
        // A followed track presenting first after every track that kept time retired: it kept time from
        // the last retirement on already, and keeps it (nothing moves); before it, it counts as missing
        // from where it stopped counting (or from the start), as it did while it had not presented.
        let from = state.countedUntil[track] ?? MediaTime(microseconds: .min)
        if from < handover { state.unjudged[track, default: []].append(MediaRange(start: from, end: handover)) }
      } else if state.unjudged[track] != nil {
        // A track added while playing counts as missing up to what plays now: its first frame may come
        // after the others went on into a hole, and that hole stays skipped (nothing shown moves back).
        Self.missingUntilPlaying(track, now: now, &state)
      }
      state.countedUntil[track] = nil
      // The first followed track to present, after frames of another channel did: until then every
      // followed track counted; those that have presented nothing go on counting up to what plays now.
      if state.tracks.contains(track), state.tracks.intersection(state.active) == [track],
        state.active.count > 1, let anchor = state.anchor
      {
        let playing = Self.playing(at: state.pausedAt ?? now, anchor: anchor, state)
        for other in state.tracks where other != track { state.countedUntil[other] = playing }
      }
      // A track that starts keeping time may close holes the others had.
      wakes = updateHoles(&state)
    }
    if state.paused && state.pausedAt == nil { state.pausedAt = now }
    let anchor = state.anchor ?? (state.pausedAt ?? started(now, state.rate), time)
    state.anchor = anchor
    let instant = Self.instant(
      of: time, anchor: Anchor(clock: anchor.clock, media: anchor.media), skips: state.skips, rate: state.rate)
    return (instant, wakes)
  }

  /// `track` counts as missing up to what plays at `now`, and to the end of a hole that plays then (at a
  /// hole's start exactly, the frame after it may be on screen already: the hole stays).
  private static func missingUntilPlaying(_ track: TrackID, now: ClockInstant, _ state: inout State) {
    guard let anchor = state.anchor else { return }
    let playing = Self.playing(at: state.pausedAt ?? now, anchor: anchor, state)
    let skipping = state.skips.holes.first { $0.start <= playing && playing < $0.end }
    state.unjudged[track, default: []].append(
      MediaRange(start: MediaTime(microseconds: .min), end: skipping?.end ?? playing))
  }

  /// Where a clock anchored at `now` while playing at `rate` starts: ``startLatency`` later above 1×, at
  /// `now` otherwise (at 1× and slower a frame may be late by its whole duration, 40 ms or more, and the
  /// sound plays: the picture must not lead it).
  private func started(_ now: ClockInstant, _ rate: PlaybackRate) -> ClockInstant {
    guard rate.numerator > rate.denominator else { return now }
    return ClockInstant(microseconds: now.microseconds &+ startLatency.microseconds)
  }

  /// The instant of media time `time`: the anchor's, plus the media after it outside the holes, scaled.
  private static func instant(of time: MediaTime, anchor: Anchor, skips: Skips, rate: PlaybackRate)
    -> ClockInstant
  {
    let skipped = skips.skipped(after: anchor.media, until: time)
    let offset = MediaDuration.microseconds(Skips.sum(Skips.span(anchor.media, time), -skipped))
    let scaled = (try? offset.scaled(by: rate)) ?? offset
    return ClockInstant(microseconds: Skips.sum(anchor.clock.microseconds, scaled.microseconds))
  }

  /// Where `pacer` may present a frame of `track` at media time `time`: while the anchor waits for the
  /// other pacers' first frames, ``Schedule/awaitingPreroll(until:)`` (the frame is offered: ask again
  /// when woken or at that instant); once every pacer that prerolls has offered or been excused, or
  /// the limit has passed, the anchor is the earliest offered time at `now` (``startLatency`` later above
  /// 1×; at the pause, while
  /// paused) and the frame's instant follows from it, as ``instant(of:track:now:)``.
  public func schedule(of time: MediaTime, track: TrackID, now: ClockInstant, for pacer: ObjectIdentifier) -> Schedule {
    var reader = reader()
    return schedule(of: time, track: track, now: now, for: pacer, reading: &reader)
  }

  /// ``schedule(of:track:now:for:)`` without the lock once the anchor is set and `track` keeps time:
  /// the instant follows from `reader`'s copy of the mapping (the lock is taken for the first frames, the
  /// preroll, and a paused play's first instant).
  public func schedule(
    of time: MediaTime, track: TrackID, now: ClockInstant, for pacer: ObjectIdentifier, reading reader: inout Reader
  ) -> Schedule {
    let mapping = reader.mapping.current
    if let anchor = mapping.anchor, mapping.active.contains(track), !mapping.paused || mapping.pausedAt != nil {
      return .at(Self.instant(of: time, anchor: anchor, skips: mapping.skips, rate: mapping.rate))
    }
    // One lock per frame: the preroll and the instant are decided together.
    let (schedule, wakes) = mutate { state -> (Schedule, [Completion<Void>]) in
      var wakes: [Completion<Void>] = []
      if state.anchor == nil {
        state.offers[pacer] = min(state.offers[pacer] ?? time, time)
        let since = state.prerollSince ?? now
        state.prerollSince = since
        let deadline = ClockInstant(microseconds: since.microseconds + Self.prerollLimit.microseconds)
        guard Self.prerolled(state) || now >= deadline else { return (.awaitingPreroll(until: deadline), []) }
        wakes = anchorAtEarliestOffer(&state, now: now, except: pacer)
      }
      let (instant, more) = locked(instantOf: time, track: track, now: now, &state)
      return (.at(instant), wakes + more)
    }
    for wake in wakes { wake(()) }
    return schedule
  }

  /// `pacer` has nothing to offer before the anchor (a gap or the end came first): the anchor no longer
  /// waits for it.
  public func excuse(_ pacer: ObjectIdentifier, now: ClockInstant) {
    let wakes = mutate { state -> [Completion<Void>] in
      guard state.anchor == nil, state.excused.insert(pacer).inserted, !state.offers.isEmpty, Self.prerolled(state)
      else { return [] }
      return anchorAtEarliestOffer(&state, now: now, except: nil)
    }
    for wake in wakes { wake(()) }
  }

  /// Every pacer that prerolls has offered a frame or been excused.
  private static func prerolled(_ state: State) -> Bool {
    state.pacers.allSatisfy { pacer in
      !pacer.prerolls || state.offers[pacer.id] != nil || state.excused.contains(pacer.id)
    }
  }

  /// Anchors the earliest offered time at `now` (``startLatency`` later above 1×; the pause's instant while
  /// paused); returns the pacers
  /// to wake (all but `except`): their offered frames have an instant now.
  private func anchorAtEarliestOffer(_ state: inout State, now: ClockInstant, except: ObjectIdentifier?)
    -> [Completion<Void>]
  {
    guard let earliest = state.offers.values.min() else { return [] }
    if state.paused && state.pausedAt == nil { state.pausedAt = now }
    state.anchor = (state.pausedAt ?? started(now, state.rate), earliest)
    state.offers = [:]
    state.prerollSince = nil
    state.bump = true
    return state.wakes(except: except)
  }

  /// A gap event reached a pacer: where every track that keeps time now has a gap, a hole is skipped
  /// (and the pacers woken when the holes changed).
  public func note(_ gap: RecordingGap) {
    let wakes = mutate { state -> [Completion<Void>] in
      let tracks = state.tracks
      let concerned = gap.tracks.isEmpty ? tracks : tracks.intersection(gap.tracks)
      for track in concerned where state.gaps[track]?.contains(gap.range) != true {
        state.gaps[track, default: []].append(gap.range)
      }
      if tracks.isEmpty || gap.tracks.isEmpty, !state.everywhere.contains(gap.range) {
        state.everywhere.append(gap.range)
      }
      let wakes = updateHoles(&state)
      forgetOldGaps(&state)
      return wakes
    }
    for wake in wakes { wake(()) }
  }

  /// The most gaps kept per track (and of every track at once).
  static let keptGaps = 64

  /// Keeps at most ``keptGaps`` per list: past that, the oldest are let go of, and the holes that end
  /// before them are kept as a sum (``Skips``): every instant from there on stays what it was. (A play
  /// crossing its 17th gap once lost its first hole here, and every later frame waited that hole's
  /// length.) Gaps arrive in media order, as the pacers reach them: frames that old are not scheduled
  /// any more. Before the anchor nothing is let go of.
  private func forgetOldGaps(_ state: inout State) {
    let lists = Array(state.gaps.values) + [state.everywhere]
    let cut = lists.filter { $0.count > Self.keptGaps }.map { list in
      list.map(\.end).sorted()[list.count - Self.keptGaps - 1]
    }.max()
    guard let cut, let anchor = state.anchor else { return }
    if cut > max(anchor.media, state.skips.floor ?? anchor.media) {
      state.skips.before = state.skips.skipped(after: anchor.media, until: cut)
      state.skips.floor = cut
    }
    for track in Array(state.gaps.keys) { state.gaps[track]?.removeAll { $0.end <= cut } }
    state.everywhere.removeAll { $0.end <= cut }
    for track in Array(state.unjudged.keys) { state.unjudged[track]?.removeAll { $0.end <= cut } }
    state.skips.holes.removeAll { $0.end <= cut }
  }

  /// Where the last of the tracks that kept time retired, when all of them did (the last picture left
  /// before the sound beside it played): from there on the other followed tracks keep time. Nil while one
  /// that presented still follows, or none presented.
  private static func handover(_ state: State) -> MediaTime? {
    let keeping = state.tracks.intersection(state.active)
    guard !keeping.isEmpty else { return nil }
    var last = MediaTime(microseconds: .min)
    for track in keeping {
      guard let retired = state.retiredFrom[track] else { return nil }
      last = max(last, retired)
    }
    return last
  }

  /// Recomputes the holes: the gaps of every track that keeps time (of every track the playback
  /// presents while none does yet), and the gaps of all tracks at once. Returns the pacers to wake when
  /// they changed. (Before a followed track presents, only a frame of another channel asks for an
  /// instant: a gap of one followed track is no hole for it — it was, and a channel's sound that came
  /// first after a seek into the picture's gap was handed all at once.)
  private func updateHoles(_ state: inout State) -> [Completion<Void>] {
    let keeping = state.tracks.intersection(state.active)
    // Every track that kept time retired (``handover(_:)``): from the last retirement on the others keep
    // time, as the only tracks followed; before it nothing changes (they count as they did until then,
    // and as missing after that up to the handover).
    let handedOver = Self.handover(state)
    let counted = keeping.isEmpty || handedOver != nil ? state.tracks : keeping.union(state.countedUntil.keys)
    var pieces: [MediaRange] = []
    if !counted.isEmpty {
      pieces = [MediaRange(start: MediaTime(microseconds: .min), end: MediaTime(microseconds: .max))]
      for track in counted {
        var gaps = (state.gaps[track] ?? []) + (state.unjudged[track] ?? [])
        if let retired = state.retiredFrom[track] {
          gaps.append(MediaRange(start: retired, end: MediaTime(microseconds: .max)))
        }
        if let handedOver, !keeping.contains(track) {
          let missingFrom = state.countedUntil[track] ?? MediaTime(microseconds: .min)
          if missingFrom < handedOver { gaps.append(MediaRange(start: missingFrom, end: handedOver)) }
        } else if let until = state.countedUntil[track] {
          gaps.append(MediaRange(start: until, end: MediaTime(microseconds: .max)))
        }
        pieces = pieces.flatMap { piece in gaps.compactMap { piece.clamped(to: $0) } }
      }
    }
    let floor = state.skips.floor ?? MediaTime(microseconds: .min)
    let holes = Self.merged((pieces + state.everywhere).filter { !$0.isEmpty && $0.end > floor })
    guard holes != state.skips.holes else { return [] }
    state.skips.holes = holes
    state.bump = true
    return state.wakes()
  }

  /// Presents `track` too from now on (an output of another kind joined the playback), whose gaps are
  /// known from `judgedFrom` on (before it, the track counts as missing: holes skipped already stay
  /// skipped): once it has presented a frame, a later stretch is a hole only where it has a gap as well.
  /// Until the next ``reset()`` (after a seek every track's gaps are known from the target).
  /// A track retired before (``retire(_:from:now:)``) returns: it counts as missing from its retirement
  /// until `judgedFrom`, as having media or gaps after. `missing`: stretches after `judgedFrom` where the
  /// track is known to have no media (its gaps in what was read before it was followed). A track that
  /// presented already (an output of it played beside the judged ones) counts as missing up to what plays
  /// at `now` too, as a track added late does at its first frame: a hole skipped stays skipped.
  public func add(_ track: TrackID, judgedFrom: MediaTime, missing: [MediaRange] = [], now: ClockInstant) {
    let wakes = mutate { state -> [Completion<Void>] in
      if state.tracks.insert(track).inserted {
        state.unjudged[track] = [MediaRange(start: MediaTime(microseconds: .min), end: judgedFrom)] + missing
      } else if let retired = state.retiredFrom.removeValue(forKey: track) {
        if judgedFrom > retired {
          state.unjudged[track, default: []].append(MediaRange(start: retired, end: judgedFrom))
        }
        state.unjudged[track, default: []].append(contentsOf: missing)
      } else {
        return []
      }
      if state.active.contains(track) { Self.missingUntilPlaying(track, now: now, &state) }
      return updateHoles(&state)
    }
    for wake in wakes { wake(()) }
  }

  /// No longer presents `track` from media time `from` on, or from what plays at `now` if that is later
  /// (its last output left while the others play on): a later stretch is a hole where the other tracks
  /// have a gap, as in a playback built without it; the instants of what played before stay what they
  /// were (a stretch the others miss that is playing now is skipped from now, not from its start: what
  /// follows it is not put in the past). A ``reset()`` forgets the track (after a seek the playback is
  /// the one built without it); ``add(_:judgedFrom:missing:now:)`` brings it back.
  public func retire(_ track: TrackID, from: MediaTime, now: ClockInstant) {
    let wakes = mutate { state -> [Completion<Void>] in
      guard state.tracks.contains(track), state.retiredFrom[track] == nil else { return [] }
      let playing = state.anchor.map { Self.playing(at: state.pausedAt ?? now, anchor: $0, state) } ?? from
      state.retiredFrom[track] = max(from, playing)
      // It went while the playback ran: back, it is judged late (its first frame after its return).
      if state.unjudged[track] == nil { state.unjudged[track] = [] }
      return updateHoles(&state)
    }
    for wake in wakes { wake(()) }
  }

  /// Wakes `wake` whenever a hole is found or the anchor is set (one per pacer; a new one replaces the
  /// old; nil: the pacer stopped and is no longer awaited); the anchor waits for `pacer`'s first frame
  /// when it `prerolls`.
  public func register(_ pacer: ObjectIdentifier, wake: Completion<Void>?, prerolls: Bool = true) {
    mutate { state in
      let entry = wake.map { (pacer, $0, prerolls) }
      if let place = state.pacers.firstIndex(where: { $0.id == pacer }) {
        if let entry { state.pacers[place] = entry } else { state.pacers.remove(at: place) }
      } else if let entry {
        state.pacers.append(entry)
      }
    }
  }

  /// Wakes every pacer to schedule its waiting frame again (the clock they wait on was set ahead: their
  /// timers would fire late).
  public func wakePacers() {
    let wakes = mutate { state -> [Completion<Void>] in
      state.bump = true
      return state.wakes()
    }
    for wake in wakes { wake(()) }
  }

  /// Forgets the anchor, the holes and the gaps (a flush of the pacers that share it, before any new frame).
  public func reset() {
    mutate { state in
      state.anchor = nil
      state.skips = Skips()
      state.gaps = [:]
      state.everywhere = []
      // A retired track is gone; one added late is judged from the flush on, as every other.
      state.tracks.subtract(state.retiredFrom.keys)
      state.retiredFrom = [:]
      state.countedUntil = [:]
      state.unjudged = [:]
      state.active = []
      state.offers = [:]
      state.excused = []
      state.prerollSince = nil
    }
  }

  /// `ranges` sorted, overlapping and touching ones joined.
  private static func merged(_ ranges: [MediaRange]) -> [MediaRange] {
    var result: [MediaRange] = []
    for range in ranges.sorted(by: { $0.start < $1.start }) {
      if let last = result.last, range.start <= last.end {
        result[result.count - 1] = MediaRange(start: last.start, end: max(last.end, range.end))
      } else {
        result.append(range)
      }
    }
    return result
  }
}
