import Foundation
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@testable import TrackRecording

/// The recorder's and the compositors' nodes under times a hostile file or a broken camera sends: jumps of
/// days, overlapping pauses, inputs far apart. What they hold and do stays bounded, their arithmetic is
/// checked, and the file's time never goes back (manual executor, virtual clock).
@Suite struct HostileTimeTests {
  static let video = TrackID(.video, channel: 0)
  static let a = TrackID(.audio, channel: 0)
  static let b = TrackID(.audio, channel: 1)
  static let day = 86_400.0

  static func picture(at seconds: Double, track: TrackID = video, value: UInt8 = 80) throws -> DecodedFrame {
    try CompositorTests.picture(value, at: seconds, track: track)
  }

  /// A mixer of `inputs` into mono 48 kHz.
  static func mixer(of inputs: [TrackID]) throws -> AudioMixer {
    try AudioMixer(
      inputs: inputs, format: AudioDeviceFormat(sampleRate: 48_000, channels: 1), output: TrackID(.audio, channel: 9))
  }

  @Test func RC14_RC43_overlappingPausesAreLeftOutOnce() throws {
    // Cuts [1, 3) and [2, 4) given in advance, and a pause [3.5, 5) made while recording: 1…5 is left
    // out once, so a frame at 6 s lands at 2 s of the file (never earlier than one before it).
    let seconds = { (value: Double) in MediaTime(microseconds: Int64(value * 1_000_000)) }
    let timeline = RecordingGate.Timeline(cuts: [
      MediaRange(start: seconds(2), end: seconds(4)), MediaRange(start: seconds(1), end: seconds(3)),
    ])
    timeline.pause(at: seconds(3.5))
    timeline.resume(at: seconds(5))
    let harness = try NodeHarness(RecordingGate(timeline: timeline))
    for index in 0..<20 { harness.push(try Self.picture(at: Double(index) / 2)) }
    harness.endInput()
    harness.runUntilIdle()
    let placed = harness.outputItems.map { Double($0.time.microseconds) / 1_000_000 }
    let expected: [Double] = [0, 0.5] + (0..<10).map { 1 + Double($0) / 2 }
    #expect(placed == expected, "\(placed)")
  }

  @Test func RC43_aJumpOfDaysIsAHoleNotMillionsOfRepeatedPictures() throws {
    let converter = try FrameRateConverter(fps: 20)
    let harness = try NodeHarness(converter)
    for index in 0..<10 { harness.push(try Self.picture(at: Double(index) / 20)) }
    // The camera's clock jumps by a day, then runs on; then a hole of 3 s, which is filled.
    for index in 0..<10 { harness.push(try Self.picture(at: Self.day + Double(index) / 20)) }
    for index in 0..<10 { harness.push(try Self.picture(at: Self.day + 3.5 + Double(index) / 20)) }
    harness.endInput()
    harness.runUntilIdle()
    let times = harness.outputItems.map(\.time.microseconds)
    #expect(times.count == 10 + 70 + 10, "\(times.count) pictures")
    #expect(times == times.sorted() && Set(times).count == times.count)
    #expect(times[10] == Int64(Self.day * 1_000_000), "the slots start again at the picture after the jump")
  }

  @Test func RC43_aPictureADayAfterTheOriginStartsTheSlotsItself() throws {
    // A recorder's converter counts slots from the file's 0; sound at 0 and a first picture a day later
    // must not make a day of copies of that picture.
    let converter = try FrameRateConverter(fps: 20, origin: MediaTime(microseconds: 0))
    let harness = try NodeHarness(converter)
    for index in 0..<10 { harness.push(try Self.picture(at: Self.day + Double(index) / 20)) }
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 10)
    #expect(harness.outputItems.first?.time.microseconds == Int64(Self.day * 1_000_000))
    // Within the limit, the first picture fills the slots from the origin (a picture from the start).
    let near = try NodeHarness(try FrameRateConverter(fps: 20, origin: MediaTime(microseconds: 0)))
    for index in 0..<10 { near.push(try Self.picture(at: 1 + Double(index) / 20)) }
    near.endInput()
    near.runUntilIdle()
    #expect(near.outputItems.count == 30 && near.outputItems.first?.time.microseconds == 0)
  }

  @Test func RC43_timesAtTheEndOfTheRangeFailWithATypedError() throws {
    let converter = try FrameRateConverter(fps: 240)
    let harness = try NodeHarness(converter)
    harness.push(try Self.picture(at: 0))
    harness.push(
      DecodedFrame(
        track: Self.video, time: MediaTime(microseconds: .max - 10), duration: .microseconds(50_000),
        frame: try RecorderFixtures.picture(width: 320, height: 240, value: 1)))
    harness.push(
      DecodedFrame(
        track: Self.video, time: MediaTime(microseconds: .max), duration: .microseconds(.max),
        frame: try RecorderFixtures.picture(width: 320, height: 240, value: 1)))
    harness.endInput()
    harness.runUntilIdle()
    // The first picture keeps its own slots (50 ms at 240 fps: 12), the next one starts the slots again
    // and the last cannot be placed after it (a typed error, not a trap): bounded output, in order.
    let times = harness.outputItems.map(\.time.microseconds)
    #expect(times.count == 13 && times == times.sorted(), "\(times)")
  }

  @Test func RC4_RC43_anAudioInputThatJumpsByADayIsNotStoredAsSilence() throws {
    let mixer = try Self.mixer(of: [Self.a])
    let harness = try NodeHarness(mixer)
    for index in 0..<10 { harness.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.a)) }
    for index in 0..<10 {
      harness.push(try CompositorTests.level(200, at: Self.day + Double(index) / 100, track: Self.a))
    }
    harness.push(event: .custom(TrackEnded(track: Self.a)))
    harness.endInput()
    harness.runUntilIdle()
    let frames = harness.outputItems
    // 0.1 s, a hole, 0.1 s: a few blocks, not a day of them.
    #expect(frames.count <= 12, "\(frames.count) blocks")
    let samples = CompositorTests.samples(frames)
    #expect(samples.filter { $0 == 100 }.count == 4_800 && samples.filter { $0 == 200 }.count == 4_800)
    let after = try #require(frames.first { CompositorTests.samples([$0]).contains(200) })
    #expect(abs(Double(after.time.microseconds) / 1_000_000 - Self.day) < 0.03)
  }

  @Test func RC4_RC43_aFastAudioInputIsHeldBackNotQueuedWithoutBound() throws {
    // B starts and then brings nothing while the clock stands still (a file that decodes more slowly):
    // A is waited for, and once it is maximumAhead ahead its lane closes (its TrackSource waits).
    let mixer = try Self.mixer(of: [Self.a, Self.b])
    let harness = try NodeHarness(mixer)
    harness.push(try CompositorTests.level(100, at: 0, track: Self.b))
    for index in 0..<300 { harness.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.a)) }
    harness.runUntilIdle()
    #expect(!mixer.admission.isOpen(Self.a) && mixer.admission.isOpen(Self.b))
    #expect(CompositorTests.samples(harness.outputItems).count <= 1_024, "B is waited for")
    // B catches up: the mix goes on and A's lane opens again; nothing of B was dropped.
    for index in 1..<300 { harness.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.b)) }
    harness.runUntilIdle()
    #expect(mixer.admission.isOpen(Self.a))
    let mixed = CompositorTests.samples(harness.outputItems)
    #expect(mixed.count >= 96_000 && mixed.prefix(96_000).allSatisfy { $0 == 200 }, "both inputs in every sample")
    // A source that ignores the admission: past four times the limit B is no longer waited for.
    let unbounded = try NodeHarness(
      try Self.mixer(of: [Self.a, Self.b]))
    unbounded.push(try CompositorTests.level(100, at: 0, track: Self.b))
    for index in 0..<1_500 { unbounded.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.a)) }
    unbounded.runUntilIdle()
    #expect(CompositorTests.samples(unbounded.outputItems).count >= 48_000 * 6)
  }

  @Test func RC4_RC43_aClosedLaneIsLookedAtAgainWhenTheOtherInputStops() throws {
    // B brings one frame and stops (a camera that dropped); A runs ahead and its lane closes. Nothing
    // arrives any more, yet once B has brought nothing for maximumLag of the clock it is found stalled.
    let mixer = try Self.mixer(of: [Self.a, Self.b])
    let harness = try NodeHarness(mixer)
    harness.push(try CompositorTests.level(100, at: 0, track: Self.b))
    for index in 0..<300 { harness.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.a)) }
    harness.runUntilIdle()
    #expect(!mixer.admission.isOpen(Self.a))
    harness.advance(by: .milliseconds(600))
    harness.runUntilIdle()
    #expect(mixer.admission.isOpen(Self.a), "the mix went on without B")
    #expect(CompositorTests.samples(harness.outputItems).count >= 48_000)
  }

  @Test func RC4_filesAreWaitedForSecondsNotForever() throws {
    // record --grid of files (VideoCompositor of tracks that are not live): a huge picture on a busy machine
    // brought its first frame after more than half a second of the clock, and the mixer composed its first
    // 1.3-1.7 s without it, as for a live track that stalled (helper-49). Waiting forever instead locked a
    // grid whose second file's sound starts 20 s in (helper-50): 5 s.
    let left = TrackID(.video, channel: 0)
    let right = TrackID(.video, channel: 1)
    func harness() throws -> (VideoMixer, NodeHarness<VideoMixer>) {
      let mixer = try VideoMixer(
        inputs: [left, right], cells: VideoMixer.Cell.grid(2, width: 320, height: 180), width: 320, height: 180,
        fps: 10, output: TrackID(.video, channel: 9),
        stallTime: CompositorGraph.stallTime(for: [MediaTrack(id: left, isLive: false)]))
      let harness = try NodeHarness(mixer)
      // The fast input runs ahead until its lane closes (the mixer then looks again on its clock).
      for index in 0..<60 { harness.push(try Self.picture(at: Double(index) / 10, track: left)) }
      harness.runUntilIdle()
      #expect(!mixer.admission.isOpen(left))
      return (mixer, harness)
    }
    let (_, slow) = try harness()
    slow.advance(by: .seconds(4))
    slow.runUntilIdle()
    #expect(slow.outputItems.isEmpty, "nothing composed without the slow input")
    for index in 0..<60 { slow.push(try Self.picture(at: Double(index) / 10, track: right, value: 200)) }
    slow.push(event: .custom(TrackEnded(track: left)))
    slow.push(event: .custom(TrackEnded(track: right)))
    slow.endInput()
    slow.runUntilIdle()
    // Every slot from 0 on, each with the slow input's picture in its cell (the right half).
    let times = slow.outputItems.map(\.time.microseconds)
    #expect(times.first == 0 && times.count == 60, "\(times)")
    for frame in slow.outputItems {
      let luma = frame.frame.withPlanes { $0.first?[240, 90] } ?? 0
      #expect(luma > 150, "slot \(frame.time): the slow input's cell is \(luma)")
    }
    // An input that brings nothing for longer is not waited for: the mix goes on without it.
    let (mixer, silent) = try harness()
    silent.advance(by: .seconds(6))
    silent.runUntilIdle()
    #expect(!silent.outputItems.isEmpty && mixer.admission.isOpen(left), "composed without the input that stopped")
  }

  @Test func RC4_filesComposedFromTheirStartKeepTheirPlaceWhicheverArrivesFirst() throws {
    // record --grid of A (sound from 0) and B (sound from 2 s into its file): on a busy machine B's first
    // sound reached the mixer before A's, the mix began there and A's sound was moved 2 s late, out of
    // step with its picture (helper-58). Files composed from their start give the mixers their origin.
    let origin = MediaTime(microseconds: 0)
    let mixer = try AudioMixer(
      inputs: [Self.a, Self.b], format: AudioDeviceFormat(sampleRate: 48_000, channels: 1),
      output: TrackID(.audio, channel: 9), origin: origin)
    let harness = try NodeHarness(mixer)
    harness.push(try CompositorTests.level(200, at: 2, track: Self.b))
    for index in 0..<300 { harness.push(try CompositorTests.level(100, at: Double(index) / 100, track: Self.a)) }
    for index in 1..<100 { harness.push(try CompositorTests.level(200, at: 2 + Double(index) / 100, track: Self.b)) }
    for track in [Self.a, Self.b] { harness.push(event: .custom(TrackEnded(track: track))) }
    harness.endInput()
    harness.runUntilIdle()
    let samples = CompositorTests.samples(harness.outputItems)
    #expect(harness.outputItems.first?.time == origin)
    // A alone for 2 s, then both (the limiter bends 300 a little at most), then A to 3 s.
    #expect((144_000..<144_000 + 1_024).contains(samples.count), "\(samples.count) (3 s, in whole blocks)")
    #expect(samples.prefix(96_000).allSatisfy { $0 == 100 }, "A's sound from 0, alone")
    #expect(samples[96_000..<144_000].allSatisfy { $0 >= 290 }, "B's from 2 s, with A's")
    // The same for pictures: B's first picture at 2 s comes first; the slots start at 0 with A's.
    let left = TrackID(.video, channel: 0)
    let right = TrackID(.video, channel: 1)
    let video = try VideoMixer(
      inputs: [left, right], cells: VideoMixer.Cell.grid(2, width: 320, height: 180), width: 320, height: 180,
      fps: 10, output: TrackID(.video, channel: 9), origin: origin)
    let pictures = try NodeHarness(video)
    pictures.push(try Self.picture(at: 2, track: right, value: 200))
    for index in 0..<30 { pictures.push(try Self.picture(at: Double(index) / 10, track: left)) }
    for track in [left, right] { pictures.push(event: .custom(TrackEnded(track: track))) }
    pictures.endInput()
    pictures.runUntilIdle()
    let times = pictures.outputItems.map(\.time.microseconds)
    #expect(times.first == 0 && times.count == 30, "\(times)")
    // B's cell (the right half) is black until 2 s, then shows B.
    for (index, frame) in pictures.outputItems.enumerated() {
      let luma = frame.frame.withPlanes { $0.first?[240, 90] } ?? 0
      #expect(index < 20 ? luma < 30 : luma > 150, "slot \(frame.time): B's cell is \(luma)")
    }
  }

  @Test func RC4_aCompositionIsLiveWhenOneOfItsTracksIs() throws {
    // What the compositors wait for follows from their tracks: files are waited for 5 s and make a file's
    // composition (which the recorder then waits for as a file's); one live track makes it live.
    let files = [MediaTrack(id: Self.video, isLive: false), MediaTrack(id: TrackID(.video, channel: 1), isLive: false)]
    let mixed = [files[0], MediaTrack(id: TrackID(.video, channel: 1))]
    #expect(CompositorGraph.stallTime(for: files) == .microseconds(5_000_000))
    #expect(CompositorGraph.stallTime(for: mixed) == .microseconds(500_000))
    let fileVideo = try VideoCompositor(tracks: files)
    let mixedVideo = try VideoCompositor(tracks: mixed)
    #expect(!fileVideo.outputTrack.isLive && mixedVideo.outputTrack.isLive)
    let sounds = [MediaTrack(id: Self.a, isLive: false), MediaTrack(id: Self.b, isLive: false)]
    let fileSound = try AudioCompositor(tracks: sounds)
    let mixedSound = try AudioCompositor(tracks: [sounds[0], MediaTrack(id: Self.b)])
    #expect(!fileSound.outputTrack.isLive && mixedSound.outputTrack.isLive)
  }

  @Test func RC4_RC43_manyPicturesBetweenTwoSlotsDoNotCloseALane() throws {
    // 60 pictures a second into 1 a second: all but the latest before the next slot are never shown,
    // so they do not count (a lane closed by them would never open again).
    let left = TrackID(.video, channel: 0)
    let right = TrackID(.video, channel: 1)
    let mixer = try VideoMixer(
      inputs: [left, right], cells: VideoMixer.Cell.grid(2, width: 320, height: 180), width: 320, height: 180,
      fps: 1, output: TrackID(.video, channel: 9))
    let harness = try NodeHarness(mixer)
    for index in 0..<180 {
      harness.push(try Self.picture(at: Double(index) / 60, track: left))
      harness.push(try Self.picture(at: Double(index) / 60, track: right))
      harness.runUntilIdle()
      #expect(mixer.admission.isOpen(left) && mixer.admission.isOpen(right), "picture \(index)")
    }
    harness.push(event: .custom(TrackEnded(track: left)))
    harness.push(event: .custom(TrackEnded(track: right)))
    harness.endInput()
    harness.runUntilIdle()
    #expect(harness.outputItems.count == 4, "slots 0…3: the last picture ends after 3 s")
  }

  @Test func RC4_RC43_aVideoInputThatJumpsOrRunsAheadStaysBounded() throws {
    let left = TrackID(.video, channel: 0)
    let right = TrackID(.video, channel: 1)
    let mixer = try VideoMixer(
      inputs: [left, right], cells: VideoMixer.Cell.grid(2, width: 320, height: 180), width: 320, height: 180,
      fps: 10, output: TrackID(.video, channel: 9))
    let harness = try NodeHarness(mixer)
    // Right starts and then says nothing while left decodes (the clock stands still): left's lane closes
    // at maximumQueued; a source that ignored it would still not be queued past four times that.
    harness.push(try Self.picture(at: 0, track: right))
    for index in 0..<40 { harness.push(try Self.picture(at: Double(index) / 20, track: left)) }
    harness.runUntilIdle()
    #expect(!mixer.admission.isOpen(left) && mixer.admission.isOpen(right))
    for index in 40..<200 { harness.push(try Self.picture(at: Double(index) / 20, track: left)) }
    harness.runUntilIdle()
    #expect(harness.outputItems.count >= 30, "\(harness.outputItems.count) composed of 10 s")
    // Both jump by a day: a hole, not 864,000 pictures.
    let before = harness.outputItems.count
    for index in 0..<20 {
      harness.push(try Self.picture(at: Self.day + Double(index) / 20, track: left))
      harness.push(try Self.picture(at: Self.day + Double(index) / 20, track: right))
    }
    harness.push(event: .custom(TrackEnded(track: left)))
    harness.push(event: .custom(TrackEnded(track: right)))
    harness.endInput()
    harness.runUntilIdle()
    let times = harness.outputItems.map(\.time.microseconds)
    #expect(harness.outputItems.count - before <= 120, "\(harness.outputItems.count - before) composed after")
    #expect(times == times.sorted() && Set(times).count == times.count)
  }
}
