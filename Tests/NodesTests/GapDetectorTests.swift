import Foundation
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

/// Cases of the gap detector on scripted packets and facts (times in ms from 0).
@Suite("GapDetector")
struct GapDetectorTests {
  let video = TrackID(.video, channel: 0)
  let audio = TrackID(.audio, channel: 1)
  let small = TrackFormat(codec: .h264, width: 320, height: 240)
  let other = TrackFormat(codec: .h264, width: 160, height: 120)
  let aac = TrackFormat(codec: .aac, sampleRate: 16_000, channels: 1)

  func t(_ ms: Int64) -> MediaTime { MediaTime(milliseconds: ms) }
  func r(_ from: Int64, _ to: Int64) -> MediaRange { MediaRange(startMilliseconds: from, endMilliseconds: to) }

  func frame(_ ms: Int64, key: Bool = false, lasting: Int64 = 40, format: TrackFormat? = nil) -> EncodedPacket {
    EncodedPacket(
      track: video, format: format ?? small, time: t(ms), duration: .microseconds(lasting * 1000), isKeyframe: key,
      data: Data([0]))
  }

  func sound(_ ms: Int64, channel: UInt8 = 1) -> EncodedPacket {
    EncodedPacket(
      track: TrackID(.audio, channel: channel), format: aac, time: t(ms), duration: .microseconds(64_000),
      isKeyframe: true, data: Data([0]))
  }

  func harness(_ range: MediaRange, audio: Bool = false, file: Bool = false) throws -> NodeHarness<GapDetector> {
    try NodeHarness(
      GapDetector(
        configuration: .init(range: range, videoTrack: video, audioTrack: audio ? self.audio : nil, writesFile: file)))
  }

  /// What left the node: `f<ms>` for a frame (with `/<duration>` when it was shortened), `a<ms>` for
  /// audio, `gap <track> [from, to) reasons` for a gap, the event otherwise.
  func trace(_ harness: NodeHarness<GapDetector>) -> [String] {
    harness.output.filter { $0.event.map { "\($0)" } != "endOfStream" }.map { entry in
      switch entry {
      case .item(let packet) where packet.track.kind == .video:
        let duration = packet.duration.milliseconds
        return "f\(packet.time.milliseconds)" + (duration == 40 ? "" : "/\(duration)")
      case .item(let packet):
        return "a\(packet.time.milliseconds)"
      case .event(.gap(let gap as RecordingGap)):
        return
          "gap \(gap.tracks.map(\.description).joined()) \(gap.range) \(gap.reasons.map(\.rawValue).joined(separator: ","))"
      case .event(let event):
        return "\(event)"
      }
    }
  }

  @Test(
    "an object without video of the channel: the frame before it stops at its start, a trackUnavailable gap follows")
  func objectWithoutVideo() throws {
    let harness = try harness(r(0, 9000))
    harness.push(event: .rangeStart(r(0, 3000)))
    harness.push(contentsOf: [frame(0, key: true), frame(40, lasting: 2920)])
    harness.push(event: .rangeStart(r(3000, 6000)))  // audio only
    harness.push(event: .rangeStart(r(6000, 9000)))
    // The demuxer's look-ahead gives the last frame before the hole the distance to the next one.
    harness.push(contentsOf: [frame(2960, lasting: 3040), frame(6000, key: true)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([0, 3000))", "f0", "f40/2920", "rangeStart([3000, 6000))", "rangeStart([6000, 9000))",
        "f2960", "gap video:0 [3000, 6000) trackUnavailable", "f6000",
        "gap video:0 [6040, 9000) trackUnavailable",
      ])
  }

  @Test("an audio track followed late is judged from the end of what of it passed, and from the start after a flush")
  func audioFollowedLate() throws {
    let harness = try harness(r(0, 9000))
    harness.push(contentsOf: [frame(0, key: true), sound(0), frame(40), sound(64), frame(80)])
    harness.runUntilIdle()
    // Unaccounted audio passed up to 128 ms: judged from there, not from the range's start (no false gap).
    #expect(harness.node.follow(audio: audio) == t(128))
    #expect(harness.node.follow(audio: TrackID(.audio, channel: 2)) == nil)
    harness.push(contentsOf: [sound(128), frame(120), sound(192), sound(900), frame(160)])
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "f0", "a0", "f40", "a64", "f80", "a128", "f120", "a192", "gap audio:1 [256, 900) noRecording", "a900",
        "f160",
      ])
    // A flush (a seek) keeps following it: both tracks are accounted for from the start again.
    harness.flush()
    let before = trace(harness).count
    harness.push(contentsOf: [frame(0, key: true), sound(500)])
    harness.runUntilIdle()
    #expect(
      trace(harness).dropFirst(before).filter { !$0.hasPrefix("flush") }
        == ["f0", "gap audio:1 [0, 500) noRecording", "a500"])
  }

  @Test("audio unfollowed passes unaccounted for; followed again, it is judged from the end of what passed")
  func audioUnfollowed() throws {
    let harness = try harness(r(0, 9000))
    harness.node.follow(audio: audio)
    harness.push(contentsOf: [frame(0, key: true), sound(0), sound(64)])
    harness.runUntilIdle()
    harness.node.unfollow(audio: audio)
    #expect(harness.node.configuration.audioTrack == nil)
    // A silence while unfollowed is no gap; followed again from the end of what passed.
    harness.push(contentsOf: [sound(900), frame(40)])
    harness.runUntilIdle()
    #expect(harness.node.follow(audio: audio) == t(964))
    harness.push(contentsOf: [sound(2000), frame(80)])
    harness.runUntilIdle()
    #expect(
      trace(harness) == ["f0", "a0", "a64", "a900", "f40", "gap audio:1 [964, 2000) noRecording", "a2000", "f80"])
  }

  @Test("silences of audio passed unaccounted for: over 200 ms, from a time on, before its first packet too")
  func silencesUnaccounted() throws {
    let harness = try harness(r(0, 9000))
    harness.push(contentsOf: [frame(0, key: true)] + [300, 364, 428, 800, 864, 1000, 1064].map { sound(Int64($0)) })
    harness.runUntilIdle()
    // 492-800 is one (308 ms); 928-1000 is not (72 ms); before the first packet, from 0.
    #expect(harness.node.missing(of: audio, from: t(0)) == [r(0, 300), r(492, 800)])
    #expect(harness.node.missing(of: audio, from: t(600)) == [r(600, 800)])
    #expect(harness.node.missing(of: audio, from: t(900)) == [])
    #expect(harness.node.missing(of: TrackID(.audio, channel: 2), from: t(0)) == nil)
    // Followed and unfollowed: what passes next has no silence before it.
    harness.node.follow(audio: audio)
    harness.node.unfollow(audio: audio)
    harness.push(contentsOf: [sound(1500), sound(1564)])
    harness.runUntilIdle()
    #expect(harness.node.missing(of: audio, from: t(1100)) == [r(1128, 1500)])
    // A flush forgets them.
    harness.flush()
    #expect(harness.node.missing(of: audio, from: t(0)) == nil)
    // Accounted for from the start, then unfollowed: what passed was judged (its gaps sent), so no
    // silence is known before what passes next, only among it.
    let followed = try self.harness(r(0, 9000), audio: true)
    followed.push(contentsOf: [frame(0, key: true), sound(0), sound(64)])
    followed.runUntilIdle()
    followed.node.unfollow(audio: audio)
    followed.push(contentsOf: [sound(1000), sound(1064), sound(1500)])
    followed.runUntilIdle()
    #expect(followed.node.missing(of: audio, from: t(100)) == [r(128, 1000), r(1128, 1500)])
    // Another channel's sound passes unaccounted for while one is followed: its silences are known too
    // (it may take the sound over), and it is followed from where it passed.
    let beside = try self.harness(r(0, 900_000), audio: true)
    beside.push(contentsOf: [frame(0, key: true), sound(0), sound(0, channel: 2), sound(500, channel: 2)])
    beside.runUntilIdle()
    let second = TrackID(.audio, channel: 2)
    #expect(beside.node.missing(of: second, from: t(0)) == [r(64, 500)])
    beside.node.unfollow(audio: audio)
    #expect(beside.node.follow(audio: second) == t(564))
    // Silences are kept for 120 s of sound back from the last packet (a joining branch needs those of
    // the few seconds read ahead): older ones are let go.
    let long = try self.harness(r(0, 900_000))
    long.push(contentsOf: stride(from: Int64(0), through: 400_000, by: 1_000).map { sound($0) })
    long.runUntilIdle()
    let kept = try #require(long.node.missing(of: audio, from: t(0)))
    #expect(kept.count == 121 && kept.first == r(279_064, 280_000) && kept.last == r(399_064, 400_000), "\(kept.count)")
  }

  @Test("video passed unaccounted for: its holes are known, and followed it decodes on from where it passed")
  func videoFollowedLate() throws {
    let harness = try NodeHarness(
      GapDetector(configuration: .init(range: r(0, 9000), videoTrack: nil, audioTrack: audio)))
    harness.push(contentsOf: [frame(0, key: true), frame(40), frame(80), frame(1000, key: true), frame(1040)])
    harness.runUntilIdle()
    // 120-1000 has no picture; a frame exactly after the last (judged in decode order) is no hole.
    #expect(harness.node.missing(of: video, from: t(0)) == [r(120, 1000)])
    #expect(harness.node.missing(of: video, from: t(500)) == [r(500, 1000)])
    #expect(harness.node.follow(video: video) == t(1080))
    #expect(harness.node.follow(video: video) == nil)
    // Followed: the next frame is no keyframe, and passes (a branch decodes on); a hole is a gap.
    harness.push(contentsOf: [frame(1080), frame(2000, key: true)])
    harness.runUntilIdle()
    #expect(Array(trace(harness).suffix(3)) == ["f1080", "gap video:0 [1120, 2000) noRecording", "f2000"])
    // Nothing passed: judged from where the audio is accounted for, the first frame must be a keyframe
    // (the one before is dropped: noKeyFrame).
    let fresh = try NodeHarness(
      GapDetector(configuration: .init(range: r(0, 9000), videoTrack: nil, audioTrack: audio)))
    fresh.push(contentsOf: [sound(0), sound(64)])
    fresh.runUntilIdle()
    #expect(fresh.node.follow(video: video) == t(128))
    fresh.push(contentsOf: [frame(200), frame(400, key: true)])
    fresh.runUntilIdle()
    #expect(trace(fresh) == ["a0", "a64", "gap video:0 [128, 400) noKeyFrame,noRecording", "f400"])
    // After a hole, pictures before the next keyframe do not decode: missing up to it. Followed while
    // one is awaited, the next pictures wait for a keyframe too (as a track followed all along).
    let late = try NodeHarness(
      GapDetector(configuration: .init(range: r(0, 9000), videoTrack: nil, audioTrack: audio)))
    late.push(contentsOf: [frame(0, key: true), frame(40), frame(1000), frame(1040), frame(2000, key: true)])
    late.push(contentsOf: [frame(2040), frame(3000)])
    late.runUntilIdle()
    #expect(late.node.missing(of: video, from: t(0)) == [r(80, 2000)])
    #expect(late.node.follow(video: video) == t(2080))
    late.push(contentsOf: [frame(3040), frame(4000, key: true)])
    late.runUntilIdle()
    #expect(Array(trace(late).suffix(2)) == ["gap video:0 [2080, 4000) noKeyFrame,noRecording", "f4000"])
  }

  @Test("facts merge into one gap, sent before the next frame: a failed object and frames without a keyframe")
  func factsMerge() throws {
    let harness = try harness(r(0, 9000))
    harness.push(event: .rangeStart(r(0, 3000)))
    harness.push(contentsOf: [frame(0, key: true, lasting: 2960), frame(2960)])
    harness.push(event: .gap(RecordingGap(range: r(3000, 6000), tracks: [video, audio], reasons: [.integrityFailed])))
    harness.push(event: .rangeStart(r(6000, 9000)))
    harness.push(event: .gap(RecordingGap(range: r(6000, 7000), tracks: [video], reasons: [.noKeyFrame])))
    harness.push(contentsOf: [frame(7000, key: true, lasting: 2000)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([0, 3000))", "f0/2960", "f2960", "rangeStart([6000, 9000))",
        "gap video:0 [3000, 7000) integrityFailed,noKeyFrame", "f7000/2000",
      ])
  }

  @Test("a stretch no object and no fact covers is noRecording; one an object covers, trackUnavailable")
  func unexplainedStretches() throws {
    let harness = try harness(r(0, 10_000))
    harness.push(event: .rangeStart(r(4000, 6000)))
    harness.push(contentsOf: [frame(5000, key: true)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([4000, 6000))", "gap video:0 [0, 5000) trackUnavailable,noRecording", "f5000",
        "gap video:0 [5040, 6000) trackUnavailable",
      ])
  }

  @Test(
    "for a file, video in another format is dropped and its stretch is unsupportedMedia until a keyframe in the first")
  func incompatibleVideo() throws {
    let harness = try harness(r(0, 1000), file: true)
    harness.push(event: .rangeStart(r(0, 1000)))
    harness.push(contentsOf: [
      frame(0, key: true), frame(40), frame(80, key: true, format: other), frame(120, format: other), frame(160),
      frame(200, key: true), frame(240),
    ])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([0, 1000))", "f0", "f40", "gap video:0 [80, 200) unsupportedMedia", "f200", "f240",
        "gap video:0 [280, 1000) trackUnavailable",
      ])
  }

  @Test("for a file, frames after a gap wait for a keyframe (noKeyFrame)")
  func keyframeAfterGap() throws {
    let harness = try harness(r(0, 30_000), file: true)
    harness.push(event: .rangeStart(r(0, 30_000)))
    // Nothing for 20 s inside one object, then frames resume mid-GOP.
    harness.push(contentsOf: [frame(0, key: true), frame(40), frame(20_000), frame(20_040), frame(21_000, key: true)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([0, 30000))", "f0", "f40", "gap video:0 [80, 21000) noKeyFrame,trackUnavailable", "f21000",
        "gap video:0 [21040, 30000) trackUnavailable",
      ])
  }

  @Test("audio: silence under 200 ms is no gap unless a fact says a record was lost; a track that never comes is a gap")
  func audioGaps() throws {
    let harness = try harness(r(0, 2000), audio: true)
    harness.push(event: .rangeStart(r(0, 2000)))
    harness.push(contentsOf: [frame(0, key: true, lasting: 2000), sound(0), sound(64), sound(256)])
    harness.push(event: .gap(RecordingGap(range: r(320, 340), tracks: [audio], reasons: [.mediaUnreadable])))
    harness.push(contentsOf: [sound(384), sound(1600)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(
      trace(harness) == [
        "rangeStart([0, 2000))", "f0/2000", "a0", "a64", "a256", "gap audio:1 [320, 340) mediaUnreadable", "a384",
        "gap audio:1 [448, 1600) trackUnavailable", "a1600", "gap audio:1 [1664, 2000) trackUnavailable",
      ])
    let silent = try self.harness(r(0, 1000), audio: true)
    silent.push(event: .rangeStart(r(0, 1000)))
    silent.push(contentsOf: [frame(0, key: true, lasting: 1000)])
    silent.endInput()
    silent.runUntilIdle()
    #expect(trace(silent).last == "gap audio:1 [0, 1000) trackUnavailable")
  }

  @Test("when the stream ends early (a source failed), nothing past what upstream stated is a gap")
  func endsWhereUpstreamStopped() throws {
    let harness = try harness(r(0, 12_000))
    harness.push(event: .rangeStart(r(0, 3000)))
    harness.push(contentsOf: [frame(0, key: true, lasting: 2960), frame(2960)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(trace(harness) == ["rangeStart([0, 3000))", "f0/2960", "f2960"])
  }

  @Test("a fact refuted by media (an object listed twice, one copy failed) is no gap; a 1 ms hole a fact explains is")
  func refutedFacts() throws {
    let harness = try harness(r(0, 6000), audio: true)
    harness.push(event: .rangeStart(r(0, 6000)))
    // The failed copy's fact, then the good copy's media over the same stretch.
    harness.push(event: .gap(RecordingGap(range: r(3000, 6000), tracks: [video, audio], reasons: [.integrityFailed])))
    harness.push(contentsOf: [frame(0, key: true, lasting: 3000), sound(0)])
    for ms in stride(from: Int64(64), to: 6000, by: 64) { harness.push(sound(ms)) }
    harness.push(contentsOf: [frame(3000, lasting: 3000)])
    harness.endInput()
    harness.runUntilIdle()
    #expect(trace(harness).filter { $0.hasPrefix("gap") }.isEmpty, "\(trace(harness).filter { $0.hasPrefix("gap") })")

    let edge = try self.harness(r(999, 3000))
    edge.push(event: .gap(RecordingGap(range: r(0, 1000), tracks: [], reasons: [.noRecording])))
    edge.push(event: .rangeStart(r(1000, 3000)))
    edge.push(contentsOf: [frame(1000, key: true, lasting: 2000)])
    edge.endInput()
    edge.runUntilIdle()
    #expect(trace(edge) == ["rangeStart([1000, 3000))", "gap video:0 [999, 1000) noRecording", "f1000/2000"])
  }

  @Test("packets of other tracks and format changes pass; a gap of an unknown payload type is a failure")
  func typedEvents() throws {
    struct Foreign: EventPayload { var description: String { "foreign" } }
    let harness = try harness(r(0, 1000))
    harness.push(event: .gap(Foreign()))
    harness.runUntilIdle()
    #expect(harness.reportedFailures.map { MediaError($0.error).kind } == [.invalidArgument])
  }
}
