import Testing

@testable import DesktopOutputs

/// The samples an SDL device plays, and when: its latency from the driver's last take, a first frame
/// started on time (silence before it, or its late start skipped), and a pause that does not put the
/// sound ahead of the picture. Times are given (monotonic µs): no device, no clock.
@Suite struct SampleFeedTests {
  /// 16 kHz mono, 1024-sample buffers: the driver takes one each 64 ms.
  func feed() -> SampleFeed {
    let feed = SampleFeed(rate: 16_000, channels: 1)
    feed.bufferFrames = 1024
    return feed
  }

  /// One buffer taken by the driver at `now`, as runs of equal samples ("576×0.0").
  func pull(_ feed: SampleFeed, at now: Int64) -> [String] {
    var buffer = [Float](repeating: .nan, count: 1024)
    buffer.withUnsafeMutableBytes { bytes in
      feed.pull(into: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes: bytes.count, now: now)
    }
    var runs: [(value: Float, count: Int)] = []
    for sample in buffer {
      if let last = runs.last, last.value == sample {
        runs[runs.count - 1].count += 1
      } else {
        runs.append((sample, 1))
      }
    }
    return runs.map { "\($0.count)×\($0.value)" }
  }

  /// A frame of `count` samples, each `value`, appended.
  func append(_ feed: SampleFeed, _ parts: [(count: Int, value: Float)]) {
    let samples = parts.flatMap { [Float](repeating: $0.value, count: $0.count) }
    feed.append(samples, frames: samples.count)
  }

  @Test("the frame queued last is heard when the buffer taken last has played and what is before it has")
  func latencyCountsFromTheLastTake() {
    let feed = feed()
    // Nothing taken yet: the driver takes at once.
    append(feed, [(1024, 1)])
    #expect(feed.latency(now: 5_000) == .zero)
    #expect(pull(feed, at: 10_000) == ["1024×1.0"])
    append(feed, [(512, 2)])
    append(feed, [(1024, 3)])
    // At 30 ms the buffer taken at 10 ms plays for 44 ms more, then the 512 samples (32 ms) before it.
    #expect(feed.latency(now: 30_000) == .microseconds(76_000))
    // Past the buffer's end (a late take): the next take is now.
    #expect(feed.latency(now: 200_000) == .microseconds(32_000))
  }

  @Test("a first frame that comes early waits in silence; one that comes late loses its start")
  func theFirstFrameStartsOnTime() {
    let feed = feed()
    _ = pull(feed, at: 0)
    // At 10 ms, meant for 100 ms: the next take is at 64 ms, so 36 ms (576 samples) of silence first.
    feed.align(nextFrameIn: .microseconds(90_000), now: 10_000)
    append(feed, [(1024, 1)])
    #expect(feed.latency(now: 10_000) == .microseconds(90_000))
    #expect(pull(feed, at: 64_000) == ["576×0.0", "448×1.0"])
    // Holding sound, the feed is not aligned again.
    feed.align(nextFrameIn: .microseconds(500_000), now: 70_000)
    append(feed, [(1024, 2)])
    #expect(pull(feed, at: 128_000) == ["576×1.0", "448×2.0"])
    // After a flush, a frame meant 10 ms ago: the next take is at 192 ms (in 22 ms), so 32 ms of its
    // start (512 samples) is skipped.
    feed.removeAll()
    feed.align(nextFrameIn: .microseconds(-10_000), now: 170_000)
    append(feed, [(512, 3), (512, 4)])
    // Its latency counts from where its start would have been: when it was meant.
    #expect(feed.latency(now: 170_000) == .microseconds(-10_000))
    #expect(pull(feed, at: 192_000) == ["512×4.0", "512×0.0"])
  }

  @Test("paused, the driver plays silence and the queue waits; resumed, the sound goes on where the picture does")
  func pauseKeepsTheSoundWithThePicture() {
    let feed = feed()
    append(feed, [(3072, 1)])
    #expect(pull(feed, at: 0) == ["1024×1.0"])
    // Paused at 20 ms: 44 ms of the buffer taken at 0 are heard after the picture stopped.
    feed.setPaused(true, now: 20_000)
    #expect(pull(feed, at: 64_000) == ["1024×0.0"])
    #expect(pull(feed, at: 128_000) == ["1024×0.0"])
    // Resumed at 150 ms, the next take at 192 ms (42 ms on): 2 ms (32 samples) of silence go first, so
    // the queue's head is heard 44 ms after the resume, as the picture gets there.
    feed.setPaused(false, now: 150_000)
    #expect(pull(feed, at: 192_000) == ["32×0.0", "992×1.0"])
    // Paused at 200 ms (56 ms of that buffer still to play), resumed at 300 ms with the next take 20 ms
    // on: 36 ms of silence.
    feed.setPaused(true, now: 200_000)
    _ = pull(feed, at: 256_000)
    feed.setPaused(false, now: 300_000)
    #expect(pull(feed, at: 320_000) == ["576×0.0", "448×1.0"])
  }

  @Test("a late start longer than a frame is skipped across frames; a pause after the sound ran dry adds no silence")
  func skipsCarryOverAndSilenceIsNotSound() {
    let feed = feed()
    // Meant 100 ms ago, taken at once: 1600 samples to skip, more than the first frame.
    feed.align(nextFrameIn: .microseconds(-100_000), now: 0)
    append(feed, [(1024, 1)])
    append(feed, [(1024, 2)])
    #expect(feed.latency(now: 0) == .microseconds(-36_000))
    #expect(pull(feed, at: 0) == ["448×2.0", "576×0.0"])
    // The buffer taken at 0 held 448 samples of sound (28 ms), then silence: paused at 10 ms, 18 ms of
    // sound are heard after the pause, not the buffer's 54 ms; resumed at 64 ms (a take due now): 18 ms
    // of silence first.
    append(feed, [(1024, 3)])
    feed.setPaused(true, now: 10_000)
    feed.setPaused(false, now: 64_000)
    #expect(pull(feed, at: 64_000) == ["288×0.0", "736×3.0"])
  }

  @Test("resumed just after a take, the buffer's lead is skipped rather than heard late")
  func aResumeIntoATakeSkipsAhead() {
    let feed = feed()
    append(feed, [(1024, 1), (1024, 2)])
    _ = pull(feed, at: 0)
    // Paused at 60 ms: 4 ms heard after it. Resumed at 65 ms, just after the take at 64 ms: the next
    // take is at 128 ms, 63 ms on, but the head is due 4 ms on: 59 ms (944 samples) of it are skipped.
    feed.setPaused(true, now: 60_000)
    _ = pull(feed, at: 64_000)
    feed.setPaused(false, now: 65_000)
    #expect(pull(feed, at: 128_000) == ["80×2.0", "944×0.0"])
  }
}
