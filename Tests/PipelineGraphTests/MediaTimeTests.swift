import PipelineGraph
import Testing

@Suite("Media time")
struct MediaTimeTests {
  let base90k = TimeBase(numerator: 1, denominator: 90_000)!
  let base44k = TimeBase(numerator: 1, denominator: 44_100)!

  @Test("arithmetic: add, subtract, compare; a result that does not fit throws instead of trapping")
  func checkedArithmetic() throws {
    let time = MediaTime(milliseconds: 1_000)
    #expect(try time + .milliseconds(40) == MediaTime(milliseconds: 1_040))
    #expect(try time - .milliseconds(1_040) == MediaTime(milliseconds: -40))
    #expect(try MediaTime(milliseconds: 5_000) - time == (try .seconds(4)))
    #expect(try MediaDuration.milliseconds(40) + MediaDuration.milliseconds(2) > MediaDuration.milliseconds(41))
    let latest = MediaTime(microseconds: .max)
    let earliest = MediaTime(microseconds: .min)
    #expect(throws: MediaTimeOverflow.self) { try latest + .microseconds(1) }
    #expect(throws: MediaTimeOverflow.self) { try earliest - .microseconds(1) }
    #expect(throws: MediaTimeOverflow.self) { try latest - earliest }
    #expect(throws: MediaTimeOverflow.self) { try MediaDuration.milliseconds(.max) }
    #expect(throws: MediaTimeOverflow.self) { try MediaDuration.seconds(Int64.max / 1000) }
    #expect(throws: MediaTimeOverflow.self) { try MediaDuration.microseconds(.max) + .microseconds(1) }
    // Bounded addition for times inside a range: never past the limit, never an overflow.
    #expect(latest.advanced(by: .microseconds(.max), notAfter: latest) == latest)
    #expect(
      time.advanced(by: try .seconds(10), notAfter: MediaTime(milliseconds: 2_000)) == MediaTime(milliseconds: 2_000))
    #expect(time.advanced(by: .microseconds(-5), notAfter: MediaTime(milliseconds: 2_000)) == time)
  }

  @Test("one rounding rule, nearest with halves away from zero: milliseconds, time bases, rates")
  func rounding() throws {
    #expect(MediaTime(microseconds: 1_499).milliseconds == 1)
    #expect(MediaTime(microseconds: 1_500).milliseconds == 2)
    #expect(MediaTime(microseconds: -1_499).milliseconds == -1)
    #expect(MediaTime(microseconds: -1_500).milliseconds == -2)
    #expect(MediaDuration.microseconds(2_500).milliseconds == 3)
    // 1024 samples at 44.1 kHz are 23219.95 µs: 23220 µs, and back to exactly 1024 samples.
    let frame = try MediaDuration(ticks: 1024, timeBase: base44k)
    #expect(frame == .microseconds(23_220))
    #expect(try frame.ticks(in: base44k) == 1024)
    #expect(try MediaDuration(ticks: -1024, timeBase: base44k) == .microseconds(-23_220))
    #expect(try MediaDuration.microseconds(40_000).ticks(in: base90k) == 3_600)
    // 1/8×: 40 ms of media take 320 ms; 8×: 5 ms; 3×: 13.333 ms → 13333 µs.
    let eighth = PlaybackRate(numerator: 1, denominator: 8)!
    #expect(try MediaDuration.microseconds(40_000).scaled(by: eighth) == .microseconds(320_000))
    #expect(
      try MediaDuration.microseconds(40_000).scaled(by: PlaybackRate(numerator: 8, denominator: 1)!)
        == .microseconds(5_000))
    #expect(
      try MediaDuration.microseconds(40_000).scaled(by: PlaybackRate(numerator: 3, denominator: 1)!)
        == .microseconds(13_333))
    #expect(throws: MediaTimeOverflow.self) { try MediaDuration.microseconds(.max).scaled(by: eighth) }
    #expect(throws: MediaTimeOverflow.self) {
      try MediaDuration(ticks: .max, timeBase: TimeBase(numerator: 1, denominator: 1)!)
    }
    #expect(PlaybackRate(numerator: 0, denominator: 1) == nil && TimeBase(numerator: 1, denominator: 0) == nil)
  }

  @Test("every µs → 90 kHz → µs and 44.1 kHz round trip lands on the same tick")
  func roundTrips() throws {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<10_000 {
      let ticks = Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &generator)
      for base in [base90k, base44k] {
        #expect(try MediaDuration(ticks: ticks, timeBase: base).ticks(in: base) == ticks)
      }
    }
  }

  @Test("ranges: duration, emptiness, clamping; a range of extreme times has a saturated duration")
  func ranges() {
    let range = MediaRange(startMilliseconds: 1_000, endMilliseconds: 3_000)
    #expect(range.duration == .microseconds(2_000_000))
    #expect(!range.isEmpty && MediaRange(startMilliseconds: 5, endMilliseconds: 5).isEmpty)
    #expect(
      range.clamped(to: MediaRange(startMilliseconds: 2_000, endMilliseconds: 9_000))
        == MediaRange(startMilliseconds: 2_000, endMilliseconds: 3_000))
    #expect(range.clamped(to: MediaRange(startMilliseconds: 3_000, endMilliseconds: 9_000)) == nil)
    #expect(range.contains(MediaTime(milliseconds: 1_000)) && !range.contains(MediaTime(milliseconds: 3_000)))
    let everything = MediaRange(start: MediaTime(microseconds: .min), end: MediaTime(microseconds: .max))
    #expect(everything.duration == .microseconds(.max))
    #expect(MediaRange(startMilliseconds: 3, endMilliseconds: 1).duration == .zero)
  }
}
