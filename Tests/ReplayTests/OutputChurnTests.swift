import Dispatch
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Testing
import TiCloudStorage

/// Properties of a play whose outputs come and go at random (seeded, on the virtual clock): outputs of
/// two cameras' channels bound and unbound, recordings started and stopped, seeks, pauses and speed
/// changes, in any order and at any instant, over a recording with a stretch without picture, a hole and
/// channels that miss media of their own; one play in three starts with the sound alone. Whatever joins
/// or leaves in place and whatever rebuilds, the play ends once, without an error, at its end; the
/// position never goes back but at a seek; no gap is reported twice between two seeks; no output fails
/// or presents a frame twice; every recording is an MP4 as long as its task says. Any of the seven speeds.
/// Again with speakers that say how long they hold their sound, on a clock that follows them (the sound
/// handed ahead of the picture). (60 and 30 seeds here; 900 and 400 were run when the speeds from 1/8× to
/// 8× and the speakers that hold their sound were added.)
@Suite("Outputs coming and going at random")
struct OutputChurnTests {
  /// 12 s: no picture from 5 s to 7 s, nothing from 9 s to 10 s; channel 2's sound missing from 3 s to
  /// 4 s, channel 2's picture from 7 s to 8 s.
  private static var options: LibrarySynthesizer.Options {
    var options = ReplayFixtures.options(seconds: 12)
    options.videoGaps = [(offset: 5, length: 2)]
    options.gaps = [(offset: 9, length: 1)]
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 3, length: 1)]
    options.otherVideoChannels = [2]
    options.otherVideoGaps = [(offset: 7, length: 1)]
    return options
  }

  /// One thing a user does to a running play.
  private enum Action: CustomStringConvertible {
    case bindVideo(UInt8), bindAudio(UInt8), unbind(Int), seek(Int64), pause, resume, speed(ReplaySpeed)
    case record(withSound: Bool), stopRecording(Int), wait(Int)

    var description: String {
      switch self {
      case .bindVideo(let channel): "bindVideo(\(channel))"
      case .bindAudio(let channel): "bindAudio(\(channel))"
      case .unbind(let index): "unbind(#\(index))"
      case .seek(let to): "seek(\(to))"
      case .pause: "pause"
      case .resume: "resume"
      case .speed(let speed): "speed(\(speed))"
      case .record(let sound): "record(\(sound ? "video+audio" : "video"))"
      case .stopRecording(let index): "stopRecording(#\(index))"
      case .wait(let ms): "wait(\(ms))"
      }
    }
  }

  private static func actions(seed: UInt64) -> [Action] {
    var random = SeededGenerator(seed: seed)
    let speeds: [ReplaySpeed] = [.x1, .x1, .x2, .x4, .x8, .x0_5, .x0_25, .x0_125]
    return (0..<Int.random(in: 4...12, using: &random)).flatMap { _ -> [Action] in
      let action: Action =
        switch Int.random(in: 0..<12, using: &random) {
        case 0, 1: .bindVideo(Bool.random(using: &random) ? 0 : 2)
        case 2, 3: .bindAudio(Bool.random(using: &random) ? 1 : 2)
        case 4, 5: .unbind(Int.random(in: 0..<8, using: &random))
        case 6: .seek(Int64.random(in: 0..<11_500, using: &random))
        case 7: .pause
        case 8: .resume
        case 9: .record(withSound: Bool.random(using: &random))
        case 10: .stopRecording(Int.random(in: 0..<4, using: &random))
        default: .speed(speeds.randomElement(using: &random)!)
        }
      return [action, .wait(Int.random(in: 0...1_500, using: &random))]
    }
  }

  @Test("a play whose outputs come and go at random ends once, at its end, and reports sensibly", arguments: 0..<60)
  func churn(seed: Int) throws { _ = try churn(seed: seed, latency: false) }

  @Test(
    "the same with speakers that hold their sound (the sound handed ahead), on a clock that follows them",
    arguments: 0..<30)
  func churnWithSpeakersThatHoldTheirSound(seed: Int) throws { _ = try churn(seed: seed, latency: true) }

  @Test(
    "the same seed played twice presents the same frames at the same instants and reports the same",
    arguments: [3, 64, 247])
  func aSeedPlaysAlike(seed: Int) throws {
    let first = try churn(seed: seed, latency: true)
    let second = try churn(seed: seed, latency: true)
    #expect(first == second, "seed \(seed)")
  }

  /// Plays `seed`'s actions and checks the properties; returns what was reported and presented (each
  /// view's and speaker's frames with their instants), to compare two runs.
  private func churn(seed: Int, latency: Bool) throws -> [String] {
    let actions = Self.actions(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
    let harness = try ReplayHarness(audio: true, options: Self.options, slewed: latency)
    let failures = Locked<[String]>([])
    let events = { @Sendable (event: Replay.OutputEvent) in
      if case .failed(let error) = event { failures.withLock { $0.append("\(error.code.rawValue)") } }
    }
    let speaker = { () -> any HeardSpeaker in
      latency ? DriftingSpeaker(clock: harness.clock, rate: 1) : TimedAudioDevice(clock: harness.clock)
    }
    var speakers: [any HeardSpeaker] = [harness.audio]
    var bound: [Replay.OutputID] = [harness.videoOutput, try #require(harness.audioOutput)]
    if latency {
      // The sound on a speaker that says how long it holds it.
      harness.replay.unbind(bound.removeLast())
      speakers = [speaker()]
      bound.append(harness.replay.bindAudio(channel: 1, device: speakers[0], events: events))
    }
    // One play in three starts with the sound alone.
    if seed % 3 == 2 { harness.replay.unbind(bound.removeFirst()) }
    var views: [TimedRenderer] = [harness.renderer]
    var segments: [Int] = [0]
    var recorders: [ReplayRecorder] = []
    var finished: [(ReplayRecorder, Result<Int64, MediaError>)] = []
    /// How many frames each view and speaker had presented at each seek.
    var marks: [ObjectIdentifier: [Int]] = [:]
    /// Each speaker's channel, and its frames split where a seek or a speed change cut its sound: how
    /// many it had then, and whether the play ran at 1× from there.
    var channels: [ObjectIdentifier: UInt8] = [ObjectIdentifier(speakers[0]): 1]
    var cuts: [ObjectIdentifier: [(count: Int, normal: Bool)]] = [ObjectIdentifier(speakers[0]): [(0, true)]]
    var speed = ReplaySpeed.x1
    let cut = { (speakers: [any HeardSpeaker], speed: ReplaySpeed) in
      for speaker in speakers {
        cuts[ObjectIdentifier(speaker), default: []].append((speaker.frames.count, speed == .x1))
      }
    }
    #expect(harness.play(0, 12_000) == .ok)
    for action in actions {
      switch action {
      case .bindVideo(let channel):
        let view = TimedRenderer(clock: harness.clock)
        views.append(view)
        bound.append(harness.replay.bindVideo(channel: channel, renderer: view, events: events))
      case .bindAudio(let channel):
        let device = speaker()
        speakers.append(device)
        channels[ObjectIdentifier(device)] = channel
        cuts[ObjectIdentifier(device)] = [(0, speed == .x1)]
        bound.append(harness.replay.bindAudio(channel: channel, device: device, events: events))
      case .unbind(let index):
        guard !bound.isEmpty else { break }
        harness.replay.unbind(bound.remove(at: index % bound.count))
      case .seek(let to):
        segments.append(harness.log.entries.count)
        for view in views { marks[ObjectIdentifier(view), default: []].append(view.frames.count) }
        for speaker in speakers { marks[ObjectIdentifier(speaker), default: []].append(speaker.frames.count) }
        cut(speakers, speed)
        // Once the play ended (it may have, at 4× or 8×), a seek is refused (R33).
        let code = harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + to))
        #expect(code == (harness.log.completions == 0 ? .ok : .notStarted))
      case .pause: _ = harness.replay.pause()
      case .resume: _ = harness.replay.resume()
      case .speed(let new):
        #expect(harness.replay.setSpeed(new) == .ok)
        speed = new
        cut(speakers, speed)
      case .record(let sound):
        guard let start = harness.replay.recordingStart else { break }
        let recorder = ReplayRecorder(
          destination: harness.library.appendingPathComponent("recording-\(recorders.count + finished.count).mp4"),
          videoTrack: TrackID(.video, channel: 0), audioTrack: sound ? TrackID(.audio, channel: 1) : nil,
          startsAt: start)
        let code = harness.replay.addRecorder(recorder) { _ in }
        #expect(code == (harness.log.completions == 0 ? .ok : .notStarted))
        if code == .ok { recorders.append(recorder) }
      case .stopRecording(let index):
        guard !recorders.isEmpty else { break }
        let recorder = recorders.remove(at: index % recorders.count)
        harness.replay.removeRecorder(recorder)
        finished.append((recorder, try recorder.finishWithinDeadline(playedToTheEnd: false)))
      case .wait(let ms): harness.run(for: .milliseconds(ms))
      }
    }
    // To the end: running, and with a picture to see it by.
    if bound.isEmpty {
      let view = TimedRenderer(clock: harness.clock)
      views.append(view)
      bound.append(harness.replay.bindVideo(channel: 0, renderer: view))
    }
    _ = harness.replay.resume()
    harness.runToEnd()
    for recorder in recorders { finished.append((recorder, try recorder.finishWithinDeadline(playedToTheEnd: true))) }
    let context = "seed \(seed): \(actions.map(\.description).joined(separator: " "))"
    #expect(harness.log.errors.isEmpty && failures.withLock { $0 }.isEmpty, "\(context)")
    #expect(harness.log.completions == 1, "\(context)")
    #expect(harness.log.times.last == harness.recordingStart + 12_000, "\(context)")
    // Between two seeks the position never goes back, and no gap is reported twice.
    let entries = harness.log.entries
    for (from, to) in zip(segments, segments.dropFirst() + [entries.count]) {
      let part = entries[from..<to]
      let times = part.compactMap { if case .time(let time) = $0 { time } else { nil } }
      #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "\(context): \(times.map(\.milliseconds))")
      let gaps = part.compactMap { if case .gap(let gap) = $0 { gap.range } else { nil } }
      let twice = gaps.indices.contains { later in
        gaps[..<later].contains { $0.start <= gaps[later].start && gaps[later].end <= $0.end }
      }
      #expect(!twice, "\(context): \(gaps)")
    }
    // Every recording is an MP4 as long as its task says (T18: seeks and holes closed up).
    for (recorder, result) in finished {
      // No file when no keyframe came while it recorded (it stopped at once, or the play ended).
      if case .failure(let error) = result, error.kind == .noMedia { continue }
      guard case .success(let milliseconds) = result else {
        Issue.record("\(context): the recording failed: \(result)")
        continue
      }
      guard milliseconds > 0 else { continue }
      let probed = try probeRecording(recorder.destination.path)
      #expect(abs(probed.duration * 1000 - Double(milliseconds)) < 100, "\(context): \(probed) for \(milliseconds) ms")
      #expect(probed.frames > 0 && probed.kinds.first == "video", "\(context): \(probed)")
    }
    // Nor does any output present a frame twice, or an earlier one after a later, between two seeks.
    let split = { (instants: [(media: Int64, at: Int64)], of: AnyObject) in
      zip([0] + (marks[ObjectIdentifier(of)] ?? []), (marks[ObjectIdentifier(of)] ?? []) + [instants.count]).map {
        instants[$0..<$1]
      }
    }
    for (index, view) in views.enumerated() {
      for part in split(view.frames, view) {
        #expect(zip(part, part.dropFirst()).allSatisfy { $0.media < $1.media }, "\(context): view \(index)")
      }
    }
    // At 1×, between two cuts, a speaker's sound goes on frame after frame (64 ms), but across a stretch
    // its channel has no sound: nothing is skipped when outputs join, leave or rebuild the graph. (With
    // speakers that hold their sound it found seed 64 skipping 320 ms in a third of its runs: the pacers
    // were woken in the order of their addresses, `PlaybackTimeline`.)
    let holes: [UInt8: [ClosedRange<Int64>]] = [
      1: [harness.media(9_000)...harness.media(10_000)],
      2: [harness.media(3_000)...harness.media(4_000), harness.media(9_000)...harness.media(10_000)],
    ]
    for (index, speaker) in speakers.enumerated() {
      let id = ObjectIdentifier(speaker)
      let frames = speaker.frames.map(\.media)
      let bounds = (cuts[id] ?? []) + [(frames.count, false)]
      for (from, to) in zip(bounds, bounds.dropFirst()) where from.normal {
        let part = frames[min(from.count, frames.count)..<min(to.count, frames.count)]
        for (earlier, later) in zip(part, part.dropFirst()) where later - earlier != 64_000 {
          let skipped = earlier + 64_000...later
          let inHole = (holes[channels[id] ?? 1] ?? []).contains {
            $0.lowerBound - 64_000 <= skipped.lowerBound && skipped.upperBound <= $0.upperBound + 64_000
          }
          #expect(
            inHole,
            "\(context): speaker \(index) (channel \(channels[id] ?? 0)) skipped from \((earlier - harness.media(0)) / 1000) to \((later - harness.media(0)) / 1000) ms"
          )
        }
      }
    }
    for (index, speaker) in speakers.enumerated() {
      for part in split(speaker.frames, speaker) {
        #expect(zip(part, part.dropFirst()).allSatisfy { $0.media < $1.media }, "\(context): speaker \(index)")
      }
    }
    return harness.log.entries.map { "\($0)" } + views.map { "\($0.frames.map { [$0.media, $0.at] })" }
      + speakers.map { "\($0.frames.map { [$0.media, $0.at] })" }
  }

  @Test("a graph rebuilt while the sound is a frame ahead of the picture: no sound is played twice or lost (seed 227)")
  func aRebuildGoesOnAfterTheSound() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    #expect(harness.play(0, 9_000) == .ok)
    // At 2.19 s the picture of 2.16 s is the position; the sound of 2.176 s played already.
    harness.run(for: .milliseconds(2_190))
    #expect(harness.replay.currentTime?.milliseconds == harness.recordingStart + 2_160)
    #expect(harness.audio.played.last?.time == harness.media(2_176))
    let graph = try #require(harness.replay.activeGraph)
    // A recorder of sound, which the graph has no transcoder for: the graph is rebuilt at the position.
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("sound.mp4"), videoTrack: TrackID(.video, channel: 0),
      audioTrack: TrackID(.audio, channel: 1), startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    #expect(harness.replay.activeGraph !== graph)
    harness.runToEnd()
    let sound = harness.audio.played.map(\.time)
    #expect(
      zip(sound, sound.dropFirst()).allSatisfy { $1 - $0 == 64_000 },
      "\(sound.map { $0 / 1000 - harness.recordingStart })")
    #expect(try #require(sound.last) >= harness.media(8_900))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("a hole reported just before a graph is rebuilt at the position is not reported again (seed 105)")
  func aRebuildBeforeAReportedHole() throws {
    var options = ReplayFixtures.options(seconds: 12)
    options.gaps = [(offset: 9, length: 1)]
    options.otherVideoChannels = [2]
    let harness = try ReplayHarness(options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(8_500))
    while harness.log.gaps.isEmpty && harness.clock.now.microseconds < 11_000_000 {
      harness.run(for: .milliseconds(5))
    }
    #expect(harness.replay.pause() == .ok)
    let position = try #require(harness.replay.currentTime?.milliseconds)
    #expect(harness.log.gaps.count == 1 && position < harness.recordingStart + 10_000, "\(position)")
    // Channel 2 was not read: bound while paused, it rebuilds the graph at the position.
    let graph = try #require(harness.replay.activeGraph)
    harness.replay.bindVideo(channel: 2, renderer: TimedRenderer(clock: harness.clock))
    #expect(harness.replay.activeGraph !== graph)
    #expect(harness.replay.resume() == .ok)
    harness.runToEnd()
    #expect(harness.log.gaps.count == 1, "\(harness.log.gaps)")
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }
}

/// A speaker whose frames the churn test reads back: every frame handed to it, in order.
protocol HeardSpeaker: AudioDevice {
  /// Each frame handed to the speaker: its media time and when it came (µs).
  var frames: [(media: Int64, at: Int64)] { get }
}

extension TimedAudioDevice: HeardSpeaker {
  var frames: [(media: Int64, at: Int64)] { instants }
}

extension DriftingSpeaker: HeardSpeaker {}
