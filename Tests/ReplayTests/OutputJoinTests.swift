import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import ReplayTestKit
import Synchronization
import Testing
import TiCloudStorage

/// Outputs bound and unbound while a play runs: their branches join and leave the running graph (a
/// GStreamer tee's request pads), so nothing is read again and the other outputs go on untouched; only
/// an output that drives the position rebuilds the graph.
@Suite("Outputs joining a running play")
struct OutputJoinTests {
  /// The objects fetched, each once (a rebuilt graph fetches the object it restarts in again).
  private func fetchedOnce(_ harness: ReplayHarness) -> Bool {
    Set(harness.service.fetchedStarts).count == harness.service.fetchedStarts.count
  }

  /// Media times strictly increasing: nothing presented twice, nothing out of order.
  private func increasing(_ frames: [(media: Int64, at: Int64)]) -> Bool {
    zip(frames, frames.dropFirst()).allSatisfy { $0.media < $1.media }
  }

  @Test("a second output joins the graph in place: it starts at the next keyframe, nothing is read again")
  func aSecondOutputJoins() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_100))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.replay.currentTime?.milliseconds)
    let nodes = graph.statistics().nodes.count
    let second = TimedRenderer(clock: harness.clock)
    let heard = Mutex<[String]>([])
    harness.replay.bindVideo(channel: 0, renderer: second) { event in heard.withLock { $0.append("\(event)") } }
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The branch: gate, decoder, pacer, sink.
    #expect(graph.statistics().nodes.count == nodes + 4)
    #expect(fetchedOnce(harness), "fetched \(harness.service.fetchedStarts)")
    #expect(harness.service.fetchedStarts.count == 3)
    // The first output went on as if nothing happened: every frame once, in order.
    #expect(harness.renderer.frames.count == 225)
    #expect(increasing(harness.renderer.frames))
    // The second: from the first keyframe (every 2 s) at or after the position, to the end, in step.
    let first = try #require(second.frames.first)
    #expect(first.media >= position * 1000 && (first.media - harness.media(0)) % 2_000_000 == 0)
    #expect(second.frames.last?.media == harness.media(8960))
    #expect(increasing(second.frames))
    let shown = Dictionary(harness.renderer.frames.map { ($0.media, $0.at) }, uniquingKeysWith: min)
    #expect(second.frames.allSatisfy { shown[$0.media] == $0.at })
    #expect(heard.withLock { $0 }.first == "presenting")
    #expect(harness.log.completions == 1)
  }

  @Test("an output of a channel the graph did not route joins too: its router and channel watch take it in (O40)")
  func anotherChannelJoins() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    let heard = Mutex<[String]>([])
    let silent = TimedRenderer(clock: harness.clock)
    let bound = try #require(harness.replay.currentTime?.milliseconds)
    let failedAt = Mutex<Int64?>(nil)
    let replay = harness.replay
    harness.replay.bindVideo(channel: 3, renderer: silent) { event in
      guard case .failed(let error) = event else { return }
      heard.withLock { $0.append("failed \(error.code.rawValue)") }
      failedAt.withLock { $0 = replay.currentTime?.milliseconds }
    }
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // 5 s of playback after the binding (O40), though the watch had read far past it already.
    let failed = try #require(failedAt.withLock { $0 })
    #expect(failed >= bound + 5_000 && failed <= bound + 5_200, "bound at \(bound), failed at \(failed)")
    // Channel 3 carries nothing while channel 0 carries video: 6130 once 5 s of media went by.
    #expect(heard.withLock { $0 } == ["failed 6130"])
    #expect(silent.frames.isEmpty)
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    #expect(harness.renderer.frames.count == 225 && harness.log.completions == 1)
  }

  @Test("an output bound after a seek, before the seek's first frame, joins at the target, not the old position")
  func aBindAfterASeek() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_500))
    let graph = try #require(harness.replay.activeGraph)
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 6_500)) == .ok)
    let before = harness.renderer.frames.count
    let second = TimedRenderer(clock: harness.clock)
    let failures = Mutex<[String]>([])
    harness.replay.bindVideo(channel: 0, renderer: second) { event in
      if case .failed(let error) = event { failures.withLock { $0.append("\(error.code.rawValue)") } }
    }
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // Nothing before the target on either output; the new one from the first keyframe after it (8 s).
    let afterSeek = harness.renderer.frames.dropFirst(before)
    #expect(afterSeek.first?.media == harness.media(6_520))
    #expect(second.frames.first?.media == harness.media(8_000))
    #expect(failures.withLock { $0 }.isEmpty)
    #expect(harness.log.completions == 1)
  }

  @Test("an output joining a play, paused before its first picture: it shows nothing ahead, and goes on after")
  func aJoinPausedBeforeItsFirstPicture() throws {
    // The picture of 4 s waited for its instant when the pause came: it was shown at once (0.9 s ahead
    // of the position), which left the pacer's input suspended, and the resume did not take the next
    // one: both outputs froze at 7 s.
    let harness = try ReplayHarness(seconds: 9, audio: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(2_100))
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.pause() == .ok)
    harness.run(for: .milliseconds(500))
    #expect(view.frames.isEmpty)
    #expect(harness.replay.resume() == .ok)
    harness.runToEnd()
    #expect(view.frames.count == 125 && view.frames.last?.media == harness.media(8_960) && increasing(view.frames))
    #expect(harness.renderer.frames.count == 225 && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("an output that leaves is cut from the graph in place: the others go on, nothing is read again")
  func anOutputLeaves() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    let nodes = graph.statistics().nodes.count
    let second = TimedRenderer(clock: harness.clock)
    let id = harness.replay.bindVideo(channel: 0, renderer: second)
    harness.run(for: .milliseconds(4_000))
    let seen = second.frames.count
    #expect(seen > 0)
    harness.replay.unbind(id)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(second.frames.count == seen)
    #expect(graph.statistics().nodes.count == nodes)
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    #expect(harness.renderer.frames.count == 225 && increasing(harness.renderer.frames))
    #expect(!harness.audio.played.isEmpty)
    #expect(harness.log.completions == 1)
  }

  @Test("the position's driver that leaves hands its place to another output of its track: nothing is rebuilt")
  func theDriverHandsOver() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    // A second view of the same camera joins, and presents from its keyframe on.
    let second = TimedRenderer(clock: harness.clock)
    let heir = harness.replay.bindVideo(channel: 0, renderer: second)
    harness.run(for: .milliseconds(3_000))
    #expect(!second.frames.isEmpty)
    // The first view (the position's driver) leaves: the second takes the position over in place.
    let reported = harness.log.times.count
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    let seen = harness.renderer.frames.count
    harness.runToEnd()
    #expect(harness.renderer.frames.count == seen)
    #expect(second.frames.last?.media == harness.media(8960) && increasing(second.frames))
    // The position went on with the heir to the end, and the play completed once; nothing read again.
    let after = harness.log.times.dropFirst(reported)
    #expect(after.count >= 40 && after.last == harness.recordingStart + 9000, "\(Array(after))")
    #expect(zip(after, after.dropFirst()).allSatisfy { $0 <= $1 })
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    // With no heir presenting (it joined and waits for its keyframe), the driver's leaving hangs the heir's
    // branch on again: it shows the frame after the driver's last at once, decoded from the history.
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_300))
    let replayed = try #require(harness.replay.activeGraph)
    let third = TimedRenderer(clock: harness.clock)
    _ = harness.replay.bindVideo(channel: 0, renderer: third)
    harness.run(for: .milliseconds(300))
    #expect(third.frames.isEmpty)
    let last = try #require(second.frames.last)
    let left = harness.log.times.count
    harness.replay.unbind(heir)
    #expect(harness.replay.activeGraph === replayed)
    harness.runToEnd()
    // Frame for frame where the first would have shown them: 1640 ms on, not the 2 s keyframe.
    #expect(third.frames.first?.media == last.media + 40_000 && third.frames.first?.at == last.at + 40_000)
    #expect(third.frames.count == (9_000 - 1_640) / 40 && increasing(third.frames))
    #expect(Set(third.frames.map { $0.media - $0.at }).count == 1)
    let reportedAfter = harness.log.times.dropFirst(left)
    #expect(try #require(reportedAfter.first) - harness.recordingStart <= 1_740)
    #expect(reportedAfter.last == harness.recordingStart + 9000)
    #expect(zip(reportedAfter, reportedAfter.dropFirst()).allSatisfy { $1 - $0 <= 120 }, "\(Array(reportedAfter))")
    #expect(harness.log.completions == 2 && harness.log.errors.isEmpty)
    // The new play fetched its objects again (its token may differ, D5), once each.
    #expect(harness.service.fetchedStarts.count == 6, "\(harness.service.fetchedStarts)")
  }

  @Test("the driver leaving while paused, its heir waiting for its keyframe: the heir shows the position at once")
  func theDriverLeavesAWaitingHeirWhilePaused() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(2_500))
    let heir = TimedRenderer(clock: harness.clock)
    let heard = Mutex<[String]>([])
    _ = harness.replay.bindVideo(channel: 0, renderer: heir) { event in heard.withLock { $0.append("\(event)") } }
    harness.run(for: .milliseconds(300))
    #expect(harness.replay.pause() == .ok)
    harness.run(for: .milliseconds(500))
    #expect(heir.frames.isEmpty)
    let graph = try #require(harness.replay.activeGraph)
    let shown = try #require(harness.renderer.frames.last)
    let position = harness.replay.currentTime
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.run(for: .milliseconds(500))
    // Paused, the heir shows the picture the driver showed (not the next keyframe's), once.
    #expect(heir.frames.map(\.media) == [shown.media])
    #expect(heard.withLock { $0 }.first == "presenting")
    #expect(harness.replay.currentTime == position)
    #expect(harness.replay.resume() == .ok)
    harness.run(for: .milliseconds(1_000))
    // The position goes on with the heir.
    let paused = try #require(position?.milliseconds)
    #expect(try #require(harness.replay.currentTime?.milliseconds) >= paused + 900)
    harness.runToEnd()
    #expect(heir.frames.count == 1 + (9_000 - 2_840) / 40 && increasing(heir.frames))
    #expect(heir.frames.last?.media == harness.media(8960))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
  }

  @Test("a waiting heir takes over before a hole: it reports the hole once and skips it, as the driver would")
  func aWaitingHeirBeforeAHole() throws {
    // What the driver alone shows and reports.
    let control = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 1)])
    #expect(control.play(0, 9000) == .ok)
    control.runToEnd()
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 3, length: 1)])
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(2_100))
    let heir = TimedRenderer(clock: harness.clock)
    _ = harness.replay.bindVideo(channel: 0, renderer: heir)
    harness.run(for: .milliseconds(400))
    #expect(heir.frames.isEmpty)
    let graph = try #require(harness.replay.activeGraph)
    // The hole's gap event was sent already: it waits in the edges of the branches that are cut.
    let last = try #require(harness.renderer.frames.last)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(heir.frames.first?.media == last.media + 40_000)
    let shown = Dictionary(control.renderer.frames.map { ($0.media, $0.at) }, uniquingKeysWith: min)
    #expect(heir.frames.allSatisfy { shown[$0.media] == $0.at }, "\(heir.frames.prefix(14))")
    #expect(heir.frames.last?.media == harness.media(8960))
    #expect(harness.log.gaps.map(\.range) == control.log.gaps.map(\.range) && harness.log.gaps.count == 1)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("a heir bound right after a seek, waiting for its keyframe: it goes on from the seek's first frame")
  func aWaitingHeirAfterASeek() throws {
    let control = try ReplayHarness(seconds: 9)
    #expect(control.play(0, 9000) == .ok)
    control.run(for: .milliseconds(1_000))
    #expect(control.replay.seek(to: MediaTime(milliseconds: control.recordingStart + 5_010)) == .ok)
    let seen = control.renderer.frames.count
    control.runToEnd()
    let shown = Array(control.renderer.frames.dropFirst(seen))
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 5_010)) == .ok)
    let before = harness.renderer.frames.count
    // Bound before the seek's first frame: it joins at the target and waits for the keyframe after it.
    let heir = TimedRenderer(clock: harness.clock)
    _ = harness.replay.bindVideo(channel: 0, renderer: heir)
    harness.run(for: .milliseconds(1))
    #expect(heir.frames.isEmpty)
    let graph = try #require(harness.replay.activeGraph)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // Between them, the driver and its heir show what the driver alone shows after the seek, when it does.
    let both = Array(harness.renderer.frames.dropFirst(before)) + heir.frames
    #expect(both.map(\.media) == shown.map(\.media), "\(both.prefix(3)) against \(shown.prefix(3))")
    #expect(both.map(\.at) == shown.map(\.at))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("a replay of local files keeps none of their objects: a seek back reads the file again, and plays on")
  func localFilesAreReadAgain() throws {
    let harness = try ReplayHarness(seconds: 9, readsLocalFiles: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(4_000))
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 1_010)) == .ok)
    harness.runToEnd()
    // The first object was fetched again, from the file (a service of the network would hand it from memory).
    #expect(harness.service.fetchedStarts.filter { $0 == 0 }.count == 2, "\(harness.service.fetchedStarts)")
    #expect(harness.renderer.frames.last?.media == harness.media(8960))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("an output bound while paused joins in place: it shows the position's frame at once, from what was read")
  func aBindWhilePaused() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_000))
    #expect(harness.replay.pause() == .ok)
    harness.run(for: .milliseconds(500))
    let graph = try #require(harness.replay.activeGraph)
    let shown = try #require(harness.renderer.frames.last)
    let seen = harness.renderer.frames.count
    let fetched = harness.service.fetchedStarts
    let nodes = graph.statistics().nodes.count
    let second = TimedRenderer(clock: harness.clock)
    let heard = Mutex<[String]>([])
    let id = harness.replay.bindVideo(channel: 0, renderer: second) { event in
      heard.withLock { $0.append("\(event)") }
    }
    #expect(harness.replay.activeGraph === graph)
    harness.run(for: .milliseconds(500))
    // Paused: the new view shows the picture the first one shows (decoded from the keyframe before it,
    // out of the graph's history); the first one shows nothing again, nothing is read again.
    #expect(second.frames.map(\.media) == [shown.media])
    #expect(harness.renderer.frames.count == seen)
    #expect(harness.service.fetchedStarts == fetched)
    #expect(graph.statistics().nodes.count == nodes + 4)
    #expect(heard.withLock { $0 }.first == "presenting")
    #expect(harness.replay.resume() == .ok)
    harness.run(for: .milliseconds(1_000))
    // Both go on together from there, frame for frame.
    #expect(second.frames.count > 20 && increasing(second.frames))
    let first = Dictionary(harness.renderer.frames.map { ($0.media, $0.at) }, uniquingKeysWith: min)
    #expect(second.frames.dropFirst().allSatisfy { first[$0.media] == $0.at })
    // A second video output that does not drive the position leaves in place.
    harness.replay.unbind(id)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(harness.renderer.frames.count == 225 && increasing(harness.renderer.frames))
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    #expect(harness.log.completions == 1)
  }

  /// The pictures of media time in `[start, end)` (µs) shown after the first `shown` were heard when
  /// seen (``LipSync/inStep``).
  private func inStep(
    _ harness: ReplayHarness, _ speaker: TimedAudioDevice, from start: Int64, to end: Int64, since shown: Int = 0
  ) -> Bool {
    harness.lipSync(with: speaker, from: start, to: end, since: shown).inStep
  }

  @Test(
    "the first audio output of a play of video joins in place: it plays from the position, in step, nothing read again")
  func theFirstAudioJoins() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_100))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.replay.currentTime?.milliseconds) * 1000
    let nodes = graph.statistics().nodes.count
    let speaker = TimedAudioDevice(clock: harness.clock)
    let events = Mutex<[String]>([])
    harness.replay.bindAudio(channel: 1, device: speaker) { event in events.withLock { $0.append("\(event)") } }
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The branch: gate, decoder, pacer, sink; the picture went on as if nothing happened.
    #expect(graph.statistics().nodes.count == nodes + 4)
    #expect(harness.renderer.frames.count == 225 && increasing(harness.renderer.frames))
    // The sound starts at the position (from the graph's history: each AAC frame decodes alone), not after
    // what the graph had read ahead, and plays every frame to the end, in step with the picture.
    let played = speaker.played.map(\.time)
    let first = try #require(played.first)
    #expect(first >= position - 64_000 && first <= position + 64_000, "position \(position), heard from \(first)")
    #expect(zip(played, played.dropFirst()).allSatisfy { $1 - $0 == 64_000 }, "\(played)")
    #expect(try #require(played.last) >= harness.media(8_900))
    #expect(inStep(harness, speaker, from: position + 200_000, to: harness.media(9_000)))
    #expect(events.withLock { $0 } == ["presenting", "completed"])
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("audio that joined a play of video counts for the holes and follows a seek, as in a graph built with it")
  func aJoinedAudioKeepsTime() throws {
    // The reference: the same library played with the audio bound from the start.
    let reference = try ReplayHarness(seconds: 9, gaps: [(offset: 5, length: 2)], audio: true)
    #expect(reference.play(0, 9000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(seconds: 9, gaps: [(offset: 5, length: 2)])
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(2_100))
    let graph = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    let speakerID = harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The hole in both tracks is skipped the way the reference skips it: the picture after it comes when
    // the last sound before it ends (without the audio's gap it would be waited through, 2 s).
    let pause = { (frames: [(media: Int64, at: Int64)]) in self.pause(frames, harness) }
    let skipped = try #require(pause(harness.renderer.frames))
    #expect(skipped == pause(reference.renderer.frames) && skipped < 100_000, "\(skipped) µs")
    #expect(harness.log.gaps.map(\.range) == reference.log.gaps.map(\.range))
    #expect(inStep(harness, speaker, from: harness.media(7_000), to: harness.media(9_000)))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
    // Video alone again; audio joins, then a seek in the same graph before the hole: the detector follows
    // the audio from the target too, so the hole is skipped as the reference skips it.
    harness.replay.unbind(speakerID)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(1_000))
    let replayed = try #require(harness.replay.activeGraph)
    let again = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: again)
    #expect(harness.replay.activeGraph === replayed)
    harness.run(for: .milliseconds(500))
    let seekedAt = harness.renderer.frames.count
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 3_000)) == .ok)
    #expect(harness.replay.activeGraph === replayed)
    harness.runToEnd()
    let afterSeek = Array(harness.renderer.frames.dropFirst(seekedAt))
    #expect(afterSeek.first?.media == harness.media(3_000))
    let resumed = try #require(again.played.first { $0.time >= harness.media(3_000) - 64_000 })
    #expect(resumed.time <= harness.media(3_064))
    #expect(pause(afterSeek) == pause(reference.renderer.frames))
    #expect(harness.log.completions == 2)
  }

  /// 12 s of recording, the stretch of 5 s to 7 s in objects with sound and no picture.
  private static var pictureMissing: LibrarySynthesizer.Options {
    var options = ReplayFixtures.options(seconds: 12)
    options.videoGaps = [(offset: 5, length: 2)]
    return options
  }

  /// How long the picture stood at the stretch of 5 s to 7 s (µs): from the last frame shown before it to
  /// the first shown after it.
  private func pause(_ frames: [(media: Int64, at: Int64)], _ harness: ReplayHarness) -> Int64? {
    guard let before = frames.last(where: { $0.media < harness.media(5_000) }),
      let after = frames.first(where: { $0.media >= harness.media(7_000) })
    else { return nil }
    return after.at - before.at
  }

  /// Media time minus presentation instant of each frame: constant while nothing is skipped or waited.
  private func lead(_ frames: [(media: Int64, at: Int64)]) -> Set<Int64> { Set(frames.map { $0.media - $0.at }) }

  @Test("audio that joins after a hole was skipped keeps it skipped: the picture does not wait the hole's length")
  func aJoinAfterASkippedHole() throws {
    let harness = try ReplayHarness(seconds: 12, gaps: [(offset: 3, length: 2)])
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(5_000))
    let graph = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // Every picture after the hole keeps the same distance to the clock (2 s skipped, nothing waited).
    let after = harness.renderer.frames.filter { $0.media >= harness.media(5_000) }
    #expect(after.count == 175 && lead(after).count == 1, "\(lead(after).sorted())")
    #expect(!speaker.played.isEmpty)
    #expect(inStep(harness, speaker, from: harness.media(8_500), to: harness.media(12_000)))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("a play crossing more holes than the timeline keeps still skips each of them, without waiting")
  func manyHoles() throws {
    // 70 holes of 1 s, every 2 s: the timeline keeps 64 gaps per track and lets older ones go as a sum
    // (it kept 16 and lost the first hole at the 17th: every later picture waited 1 s more).
    let holes = (0..<70).map { (offset: 1 + 2 * $0, length: 1) }
    let harness = try ReplayHarness(seconds: 141, gaps: holes)
    #expect(harness.play(0, 141_000) == .ok)
    harness.runToEnd()
    let frames = harness.renderer.frames
    #expect(frames.count == 71 * 25 && increasing(frames))
    let waits = zip(frames, frames.dropFirst()).map { $1.at - $0.at }
    #expect(waits.allSatisfy { $0 <= 40_000 }, "longest wait \(waits.max() ?? 0) µs")
    #expect(harness.log.gaps.count == 70 && harness.log.completions == 1)
  }

  @Test("the first audio output bound while paused joins in place and plays from the position once resumed")
  func theFirstAudioWhilePaused() throws {
    let harness = try ReplayHarness(seconds: 9)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(3_000))
    #expect(harness.replay.pause() == .ok)
    harness.run(for: .milliseconds(500))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.renderer.frames.last).media
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    harness.run(for: .milliseconds(500))
    #expect(speaker.played.isEmpty)
    #expect(harness.replay.resume() == .ok)
    harness.runToEnd()
    let first = try #require(speaker.played.first)
    #expect(abs(first.time - position) <= 64_000, "position \(position), heard from \(first.time)")
    #expect(inStep(harness, speaker, from: position + 200_000, to: harness.media(9_000)))
    #expect(fetchedOnce(harness) && harness.log.completions == 1)
  }

  @Test("the first audio output bound at 2× joins muted and is heard from the position back at 1×")
  func theFirstAudioAt2x() throws {
    let harness = try ReplayHarness(seconds: 12)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.setSpeed(.x2) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    harness.run(for: .milliseconds(1_000))
    #expect(speaker.played.isEmpty)
    #expect(harness.replay.setSpeed(.x1) == .ok)
    let back = harness.clock.now.microseconds
    let position = try #require(harness.renderer.frames.last).media
    harness.runToEnd()
    let first = try #require(speaker.instants.first)
    #expect(first.at - back <= 200_000 && abs(first.media - position) <= 200_000, "\(first), back at \(back)")
    #expect(inStep(harness, speaker, from: position + 300_000, to: harness.media(12_000)))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "audio joining before a stretch without picture plays it: the picture waits, as with the sound bound first",
    arguments: [2_500, 3_000] as [Int64])
  func theFirstAudioJoinsBeforeAStretch(joiningAt: Int64) throws {
    // What the graph read ahead of the position when the sound joins (its branches' edges) reaches past
    // a hole of both tracks at 4-5 s into the stretch: the silences the gap detector saw in the audio it
    // passed from the position on are its gaps (the hole is skipped), the rest plays.
    var options = Self.pictureMissing
    options.gaps = [(offset: 4, length: 1)]
    let reference = try ReplayHarness(audio: true, options: options)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(joiningAt))
    let graph = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    let waited = try #require(pause(harness.renderer.frames, harness))
    #expect(waited == pause(reference.renderer.frames, reference) && waited >= 1_900_000, "\(waited) µs")
    // The sound of the stretch was heard, each frame at its own instant (64 ms apart).
    let stretch = speaker.instants.filter { $0.media >= harness.media(4_800) && $0.media < harness.media(7_000) }
    #expect(stretch.count >= 30)
    #expect(zip(stretch, stretch.dropFirst()).allSatisfy { $1.media - $0.media == 64_000 && $1.at - $0.at == 64_000 })
    #expect(inStep(harness, speaker, from: harness.media(7_000), to: harness.media(12_000)))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("the last audio output beside a picture leaves in place: a stretch without picture is skipped after it")
  func theLastAudioLeaves() throws {
    // 2 s without picture from 5 s (the sound goes on). With the audio heard, the picture waits through
    // it; without, it is a hole and skipped — as in a play of the video alone.
    let options = Self.pictureMissing
    let reference = try ReplayHarness(options: options)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(3_000))
    let graph = try #require(harness.replay.activeGraph)
    let nodes = graph.statistics().nodes.count
    let heard = harness.audio.played.count
    #expect(heard > 0)
    harness.replay.unbind(try #require(harness.audioOutput))
    #expect(harness.replay.activeGraph === graph)
    harness.run(for: .milliseconds(1_000))
    #expect(harness.audio.played.count == heard)
    #expect(graph.statistics().nodes.count == nodes - 3)
    let resumed = harness.renderer.frames.count
    harness.runToEnd()
    let pause = { (frames: [(media: Int64, at: Int64)]) in self.pause(frames, harness) }
    let skipped = try #require(pause(harness.renderer.frames))
    #expect(skipped == pause(reference.renderer.frames) && skipped < 100_000, "\(skipped) µs \(reference.log.gaps)")
    #expect(harness.renderer.frames.count == 250 && increasing(harness.renderer.frames))
    #expect(harness.renderer.frames.count > resumed)
    #expect(harness.log.gaps.map(\.range) == reference.log.gaps.map(\.range))
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
    // A second play, of the video: the sound joins and leaves again, then a seek in the same graph:
    // after it the stretch is skipped as in a play of the video alone.
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(500))
    let replayed = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    let joined = harness.replay.bindAudio(channel: 1, device: speaker)
    harness.run(for: .milliseconds(1_500))
    #expect(!speaker.played.isEmpty)
    harness.replay.unbind(joined)
    #expect(harness.replay.seek(to: MediaTime(milliseconds: harness.recordingStart + 3_000)) == .ok)
    #expect(harness.replay.activeGraph === replayed)
    let seekedAt = harness.renderer.frames.count
    harness.runToEnd()
    #expect(pause(Array(harness.renderer.frames.dropFirst(seekedAt))) == skipped)
    // A third: the sound joins, leaves and comes back before the stretch without picture: that is
    // waited through again (its sound is heard), in step.
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(500))
    let third = try #require(harness.replay.activeGraph)
    let first = harness.replay.bindAudio(channel: 1, device: TimedAudioDevice(clock: harness.clock))
    harness.run(for: .milliseconds(1_000))
    harness.replay.unbind(first)
    harness.run(for: .milliseconds(1_000))
    let back = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: back)
    #expect(harness.replay.activeGraph === third)
    let playedAt = harness.renderer.frames.count
    harness.runToEnd()
    let waited = try #require(pause(Array(harness.renderer.frames.dropFirst(playedAt))))
    #expect(waited >= 1_900_000, "\(waited) µs")
    #expect(inStep(harness, back, from: harness.media(7_200), to: harness.media(12_000), since: playedAt))
    #expect(try #require(back.played.last).time >= harness.media(11_900))
    #expect(harness.log.completions == 3 && harness.log.errors.isEmpty)
  }

  @Test(
    "the last picture leaving a play with sound leaves in place: the sound drives on alone, as in a play of audio alone",
    arguments: [1_000, 3_000, 6_000])
  func theLastPictureLeaves(leavingAt: Int) throws {
    // 2 s without picture from 5 s (the sound goes on), and a hole of both from 9 s to 10 s.
    var options = Self.pictureMissing
    options.gaps = [(offset: 9, length: 1)]
    let reference = try ReplayHarness(audio: true, options: options)
    reference.replay.unbind(reference.videoOutput)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(leavingAt))
    let graph = try #require(harness.replay.activeGraph)
    let shown = harness.renderer.frames.count
    #expect(shown > 0)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(harness.renderer.frames.count == shown)
    // The sound went on: every frame once, in order, to the end, as in the play of audio alone.
    let sound = harness.audio.played.map(\.time)
    #expect(sound == reference.audio.played.map(\.time) && !sound.isEmpty)
    // From a second after the picture left, each frame at the distance from the one before that it has
    // in the play of audio alone: nothing waited, the hole skipped.
    let after = { (harness: ReplayHarness) in
      harness.audio.instants.filter { $0.media >= harness.media(Int64(leavingAt) + 1_000) }
    }
    let steps = { (instants: [(media: Int64, at: Int64)]) in zip(instants, instants.dropFirst()).map { $1.at - $0.at } }
    #expect(steps(after(harness)) == steps(after(reference)) && after(harness).count > 20)
    // The stretch without picture was the picture's gap while it drove: reported then.
    let start = harness.recordingStart
    let stretch = MediaRange(startMilliseconds: start + 5_000, endMilliseconds: start + 7_000)
    let expected = (leavingAt > 5_000 ? [stretch] : []) + reference.log.gaps.map(\.range)
    #expect(harness.log.gaps.map(\.range) == expected && reference.log.gaps.count == 1, "\(harness.log.gaps)")
    #expect(harness.log.times.last == start + 12_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "a picture bound after the last one left joins in place, as in a play of audio alone: from the next keyframe on it paces the play, the sound goes on"
  )
  func aPictureComesBack() throws {
    let harness = try ReplayHarness(seconds: 12, audio: true)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(1_500))
    let graph = try #require(harness.replay.activeGraph)
    harness.replay.unbind(harness.videoOutput)
    harness.run(for: .milliseconds(1_000))
    let position = try #require(harness.replay.currentTime?.milliseconds)
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The picture from the first keyframe after the position (4 s: groups of 2 s) to the end, in order.
    let frames = view.frames
    #expect(frames.first?.media == harness.media(4_000), "\(position) \(frames.prefix(1))")
    #expect(frames.last?.media == harness.media(11_960) && increasing(frames))
    // Each picture at its sound's instant: the picture paces the play, the sound beside it.
    let heard = Dictionary(harness.audio.instants.map { ($0.media, $0.at) }, uniquingKeysWith: { first, _ in first })
    let apart = frames.compactMap { frame in heard[frame.media].map { abs($0 - frame.at) } }
    #expect(apart.count > 20 && apart.allSatisfy { $0 <= 1_000 }, "\(apart.max() ?? -1)")
    // The sound went on frame after frame throughout.
    let sound = harness.audio.played.map(\.time)
    #expect(zip(sound, sound.dropFirst()).allSatisfy { $1 - $0 == 64_000 } && sound.count > 180)
    #expect(harness.log.times.last == harness.recordingStart + 12_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "a picture of another channel bound right after the last one left rebuilds the graph (the router dropped its packets from the position on): it shows from the next keyframe, no gap is reported"
  )
  func anotherPictureComesBack() throws {
    let (harness, graph) = try ReplayHarness.lastPictureLeft()
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.activeGraph === graph)
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 2, renderer: view)
    #expect(harness.replay.activeGraph !== graph)
    let output = harness.library.appendingPathComponent("other-lens.mp4")
    let recorder = ReplayRecorder(
      destination: output, videoTrack: TrackID(.video, channel: 2), audioTrack: nil,
      startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    harness.runToEnd()
    #expect(harness.log.gaps.isEmpty, "\(harness.log.gaps)")
    #expect(view.frames.last?.media == harness.media(11_960) && increasing(view.frames))
    // From the first keyframe after the position (O18), as any output bound while the play runs.
    #expect(view.frames.first?.media == harness.media(4_000))
    // The recording from the first keyframe after its start (4 s) to the end.
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    #expect(milliseconds == 8_000)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "a picture of another channel bound once the position passed what the router dropped of it joins in place, and so does its recorder"
  )
  func anotherPictureComesBackLater() throws {
    var options = ReplayFixtures.options(seconds: 30)
    options.otherVideoChannels = [2]
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 30_000) == .ok)
    harness.run(for: .milliseconds(1_500))
    let graph = try #require(harness.replay.activeGraph)
    // The last picture leaves: the sound drives on, and the router lets every picture through from the
    // packets it reads next (channel 2's before were dropped, a few seconds ahead of the position).
    harness.replay.unbind(harness.videoOutput)
    harness.run(for: .milliseconds(13_500))
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 2, renderer: view)
    let recorder = ReplayRecorder(
      destination: harness.library.appendingPathComponent("later.mp4"), videoTrack: TrackID(.video, channel: 2),
      audioTrack: nil, startsAt: try #require(harness.replay.recordingStart))
    #expect(harness.replay.addRecorder(recorder) { _ in } == .ok)
    // Nothing was dropped of channel 2 from the position on: both join the running graph.
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    #expect(harness.log.gaps.isEmpty, "\(harness.log.gaps)")
    // From the first keyframe after the position (16 s) to the end, nothing read again.
    #expect(view.frames.first?.media == harness.media(16_000))
    #expect(view.frames.last?.media == harness.media(29_960) && increasing(view.frames))
    #expect(fetchedOnce(harness))
    guard case .success(let milliseconds) = try recorder.finishWithinDeadline(playedToTheEnd: true) else {
      Issue.record("the recording failed")
      return
    }
    #expect(milliseconds == 14_000)
    let probed = try probeRecording(recorder.destination.path)
    #expect(probed.frames == 350 && abs(probed.duration - 14.0) < 0.05, "\(probed)")
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "a picture of another channel bound at any time after the last one left: no gap, from the next keyframe, in place once its channel passed whole",
    arguments: Array(stride(from: 2_000, through: 9_500, by: 250))
  )
  func anotherPictureComesBackAt(milliseconds: Int) throws {
    let (harness, graph) = try ReplayHarness.lastPictureLeft()
    harness.run(for: .milliseconds(milliseconds - 1_500))
    let position = try #require(harness.replay.currentTime?.milliseconds) - harness.recordingStart
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 2, renderer: view)
    let joined = harness.replay.activeGraph === graph
    harness.runToEnd()
    // In place or rebuilt, the same: the channel's first keyframe after the position, no gap (a join whose
    // channel passed only from inside a group of pictures took the pictures before its keyframe for missing).
    #expect(harness.log.gaps.isEmpty, "joined \(joined) at \(position) ms: \(harness.log.gaps)")
    let keyframe = (position + 1_999) / 2_000 * 2_000
    #expect(view.frames.first?.media == harness.media(keyframe), "joined \(joined) at \(position) ms")
    #expect(view.frames.last?.media == harness.media(11_960) && increasing(view.frames))
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "the last picture leaving right after a sound joined, before it played: in place, the sound drives on alone from the position"
  )
  func theLastPictureLeavesASoundNotYetPlaying() throws {
    // The reference: a play of audio alone.
    let reference = try ReplayHarness(seconds: 12, audio: true)
    reference.replay.unbind(reference.videoOutput)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(seconds: 12)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(1_500))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.replay.currentTime?.milliseconds)
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: speaker)
    #expect(harness.replay.activeGraph === graph)
    // At once, before a sound frame played: the picture leaves.
    #expect(speaker.played.isEmpty)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The sound from the position on, every frame once, in order, to the end.
    let sound = speaker.played.map(\.time)
    let first = try #require(sound.first)
    #expect(sound == reference.audio.played.map(\.time).filter { $0 >= first } && sound.count > 100)
    #expect(first <= (position + 200) * 1000, "the sound began at \(first) µs, the position was \(position) ms")
    // Each frame at the distance from the one before that it has in the play of audio alone: the sound
    // paces the play, nothing came at once.
    let steps = { (instants: [(media: Int64, at: Int64)]) in zip(instants, instants.dropFirst()).map { $1.at - $0.at } }
    let late = speaker.instants.filter { $0.media >= harness.media(3_000) }
    let alone = reference.audio.instants.filter { $0.media >= harness.media(3_000) }
    #expect(steps(late) == steps(alone) && late.count > 50)
    #expect(harness.log.times.last == harness.recordingStart + 12_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("the last picture leaving after a sound joined at a hole of its own: that hole, behind, is not reported")
  func theLastPictureLeavesAfterASoundHole() throws {
    // Channel 2's sound is missing from 3 s to 5 s; the picture plays on.
    var options = ReplayFixtures.options(seconds: 12)
    options.otherAudioChannels = [2]
    options.otherAudioGaps = [(offset: 3, length: 2)]
    let harness = try ReplayHarness(options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(3_500))
    let graph = try #require(harness.replay.activeGraph)
    let speaker = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 2, device: speaker)
    harness.run(for: .milliseconds(4_500))
    #expect(speaker.played.first.map { $0.time >= harness.media(5_000) } == true)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The sound's hole was crossed while the picture drove (not a hole of the play): it stays unreported
    // once the sound drives, 3 s after it (it was, at its first frame).
    #expect(harness.log.gaps.isEmpty, "\(harness.log.gaps)")
    #expect(try #require(speaker.played.last).time >= harness.media(11_900))
    #expect(harness.log.times.last == harness.recordingStart + 12_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("the last picture leaving a play at 2×: the sound, muted beside it, paces the play at 2× alone")
  func theLastPictureLeavesFast() throws {
    let harness = try ReplayHarness(seconds: 12, audio: true)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.setSpeed(.x2) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.replay.currentTime?.milliseconds)
    let left = harness.clock.now.microseconds
    let heard = harness.audio.played.count
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The position went on to the end at 2× (the rest of the media in half its length), in order.
    let after = harness.log.times.filter { $0 > position }
    #expect(after.count > 20 && after.last == harness.recordingStart + 12_000)
    #expect(zip(after, after.dropFirst()).allSatisfy { $0 <= $1 })
    let took = harness.clock.now.microseconds - left
    let expected = (harness.recordingStart + 12_000 - position) * 500
    #expect(abs(took - expected) <= 300_000, "took \(took) µs for \(expected) µs")
    // Nothing is heard off 1×.
    #expect(harness.audio.played.count == heard)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("the sound leaving inside a stretch without picture: the rest is skipped from then, nothing put in the past")
  func theLastAudioLeavesInsideAStretch() throws {
    let options = Self.pictureMissing
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(6_000))
    let graph = try #require(harness.replay.activeGraph)
    let heard = try #require(harness.audio.instants.last)
    #expect(heard.media > harness.media(5_800))
    let left = harness.clock.now.microseconds
    harness.replay.unbind(try #require(harness.audioOutput))
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The picture after the stretch comes at once, then each at its own instant (before, the whole
    // stretch was skipped from its start: the first second after it was due a second ago, in a burst).
    let after = harness.renderer.frames.filter { $0.media >= harness.media(7_000) }
    let first = try #require(after.first)
    #expect(first.at >= left && first.at - left <= 100_000, "shown at \(first.at), left at \(left)")
    #expect(after.count == 125 && lead(after).count == 1, "\(lead(after).sorted())")
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  /// Plays `harness` (another channel's output bound beside its own) from 0 to 12 s, unbinds `leaving`
  /// after `milliseconds` (once `before` checked what played) and runs to the end; the graph stays.
  private func handOver(
    _ harness: ReplayHarness, leaving: Replay.OutputID, at milliseconds: Int, before: () -> Void = {}
  ) throws {
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(milliseconds))
    let graph = try #require(harness.replay.activeGraph)
    before()
    harness.replay.unbind(leaving)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
  }

  @Test(
    "the picture that drives leaving while another channel's picture presents hands it the position, in place",
    arguments: [(false, 1_000), (false, 3_000), (true, 1_000), (true, 3_000)])
  func thePictureChangesChannel(sound: Bool, leavingAt: Int) throws {
    // Channel 2 shows the same picture but for 4 s to 6 s (a keyframe at 6 s).
    var options = ReplayFixtures.options(seconds: 12)
    options.otherVideoChannels = [2]
    options.otherVideoGaps = [(offset: 4, length: 2)]
    let reference = try ReplayHarness(audio: sound, options: options)
    let referenceView = TimedRenderer(clock: reference.clock)
    reference.replay.bindVideo(channel: 2, renderer: referenceView)
    reference.replay.unbind(reference.videoOutput)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: sound, options: options)
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 2, renderer: view)
    try handOver(harness, leaving: harness.videoOutput, at: leavingAt)
    // Without sound the stretch is a hole of channel 2: skipped; with it, waited through. As in the
    // reference, where channel 2 drove from the start; its gap is reported.
    let stood = { (frames: [(media: Int64, at: Int64)], harness: ReplayHarness) -> Int64? in
      guard let before = frames.last(where: { $0.media < harness.media(4_000) }),
        let after = frames.first(where: { $0.media >= harness.media(6_000) })
      else { return nil }
      return after.at - before.at
    }
    let waited = try #require(stood(view.frames, harness))
    #expect(waited == stood(referenceView.frames, reference), "\(waited) µs")
    #expect(sound ? waited >= 1_900_000 : waited < 100_000, "\(waited) µs")
    #expect(harness.log.gaps.map(\.range) == reference.log.gaps.map(\.range) && !reference.log.gaps.isEmpty)
    #expect(view.frames.count == 250 && increasing(view.frames))
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("the sound leaving while another output of its channel is bound hands it that one's place, in place")
  func anAudioLeavesAnother() throws {
    let options = Self.pictureMissing
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(2_000))
    let graph = try #require(harness.replay.activeGraph)
    let second = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 1, device: second)
    #expect(harness.replay.activeGraph === graph)
    // The second has not played yet (it is no heir of the position), but beside the picture that drives
    // it takes the sound's place: the same track, judged as before.
    harness.replay.unbind(try #require(harness.audioOutput))
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The stretch without picture is waited through: its sound is heard.
    #expect(second.played.contains { $0.time >= harness.media(5_500) && $0.time < harness.media(6_500) })
    #expect(try #require(pause(harness.renderer.frames, harness)) >= 1_900_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  /// 12 s of picture and sound on channel 1 with 2 s without picture from 5 s, the same sound on channel 2
  /// (with `silent`, none there from 5 s to 7 s either).
  private static func twoMicrophones(silent: Bool) -> LibrarySynthesizer.Options {
    var options = pictureMissing
    options.otherAudioChannels = [2]
    if silent { options.otherAudioGaps = [(offset: 5, length: 2)] }
    return options
  }

  @Test(
    "the sound leaving while another channel's audio output is bound hands it over in place: that channel is judged",
    arguments: [(false, 1_000), (false, 3_000), (false, 6_000), (true, 1_000), (true, 3_000), (true, 6_000)])
  func theSoundChangesChannel(silent: Bool, leavingAt: Int) throws {
    let options = Self.twoMicrophones(silent: silent)
    // A play of the picture and channel 2's sound only.
    let reference = try ReplayHarness(options: options)
    reference.replay.bindAudio(channel: 2, device: TimedAudioDevice(clock: reference.clock))
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    let second = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 2, device: second)
    try handOver(harness, leaving: try #require(harness.audioOutput), at: leavingAt) {
      #expect(!second.played.isEmpty)
    }
    // Channel 2 sounds in the stretch without picture: it is waited through, and heard. Silent there,
    // the stretch is a hole of the picture and channel 2: skipped, as in the reference — from the
    // handover on when it came inside the stretch (channel 1's sound of 5 s to 6 s was heard: the
    // picture of 7 s comes at 6 s, 1.04 s after the last one before the stretch).
    let waited = try #require(pause(harness.renderer.frames, harness))
    let heard = second.played.contains { $0.time >= harness.media(5_500) && $0.time < harness.media(6_500) }
    if silent && leavingAt > 5_000 {
      #expect(waited >= 1_000_000 && waited <= 1_100_000 && !heard, "\(waited) µs")
    } else {
      #expect(waited == pause(reference.renderer.frames, reference), "\(waited) µs")
      #expect(silent ? waited < 100_000 && !heard : waited >= 1_900_000 && heard, "\(waited) µs")
    }
    #expect(inStep(harness, second, from: harness.media(7_200), to: harness.media(12_000)))
    #expect(harness.renderer.frames.count == 250 && increasing(harness.renderer.frames))
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "the sound driving a play of audio alone, leaving while another channel's sound presents, hands it over in place",
    arguments: [(false, 1_000), (true, 1_000), (true, 6_000)])
  func anotherMicrophoneDrives(silent: Bool, leavingAt: Int) throws {
    let options = Self.twoMicrophones(silent: silent)
    // A play of channel 2's sound alone.
    let reference = try ReplayHarness(audio: true, options: options)
    reference.replay.unbind(reference.videoOutput)
    reference.replay.unbind(try #require(reference.audioOutput))
    let alone = TimedAudioDevice(clock: reference.clock)
    reference.replay.bindAudio(channel: 2, device: alone)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    harness.replay.unbind(harness.videoOutput)
    let second = TimedAudioDevice(clock: harness.clock)
    harness.replay.bindAudio(channel: 2, device: second)
    try handOver(harness, leaving: try #require(harness.audioOutput), at: leavingAt) {
      #expect(!second.played.isEmpty)
    }
    // Channel 2 goes on to the end: every frame once, in order.
    let heard = second.played.map(\.time)
    #expect(zip(heard, heard.dropFirst()).allSatisfy { $0 < $1 } && heard.last == alone.played.last?.time)
    let start = harness.recordingStart
    if leavingAt < 5_000 {
      // Judged from the handover on as in the play of channel 2 alone: silent from 5 s to 7 s, that is a
      // hole, skipped (each frame after it at the distance it has there) and reported.
      let after = { (device: TimedAudioDevice, at: Int64) in
        let instants = device.instants.filter { $0.media >= at }
        return zip(instants, instants.dropFirst()).map { $1.at - $0.at }
      }
      #expect(
        after(second, harness.media(Int64(leavingAt) + 1_000))
          == after(alone, reference.media(Int64(leavingAt) + 1_000)))
      #expect(harness.log.gaps.map(\.range) == reference.log.gaps.map(\.range))
      #expect(reference.log.gaps.isEmpty != silent)
    } else {
      // Inside the stretch channel 1 sounded in: the rest of it, from the handover (the audio frame at
      // 5.952 s) to 7.04 s, is channel 2's hole, reported as the position reaches it (it came 1.2 s late,
      // behind what channel 2's edges held).
      let gap = MediaRange(startMilliseconds: start + 5_952, endMilliseconds: start + 7_040)
      #expect(harness.log.gaps.map(\.range) == [gap], "\(harness.log.gaps)")
      let reported = try #require(positionAtFirstGap(harness.log))
      #expect(reported < start + 7_040, "reported at \(reported - start) ms")
    }
    #expect(harness.log.times.last == start + 12_000)
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "the first video output of a play of audio alone joins in place: the picture drives from its first keyframe, the sound goes on"
  )
  func theFirstVideoJoins() throws {
    let harness = try ReplayHarness(seconds: 9, audio: true)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.play(0, 9000) == .ok)
    harness.run(for: .milliseconds(2_100))
    let graph = try #require(harness.replay.activeGraph)
    let position = try #require(harness.replay.currentTime?.milliseconds)
    let heard = harness.audio.played.count
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    #expect(harness.replay.activeGraph === graph)
    // Paused before its first picture, and resumed.
    harness.run(for: .milliseconds(1_000))
    #expect(harness.replay.pause() == .ok)
    harness.run(for: .milliseconds(500))
    #expect(harness.replay.resume() == .ok)
    harness.runToEnd()
    // From the first keyframe (every 2 s) at or after the position: 4 s, the history's (read already).
    let first = try #require(view.frames.first)
    #expect(first.media == harness.media(4_000), "first picture \(first.media), position \(position) ms")
    #expect(view.frames.last?.media == harness.media(8960))
    #expect(increasing(view.frames) && view.frames.count == 125)
    // The sound went on: every frame once, in order, to the end, none again from the position.
    let sound = harness.audio.played.map(\.time)
    #expect(sound.count > heard && zip(sound, sound.dropFirst()).allSatisfy { $0 < $1 })
    #expect(try #require(sound.last) >= harness.media(8_900))
    // Picture and sound in step from the picture's first frame.
    let sync = harness.lipSync(of: view, from: harness.media(4_000), to: harness.media(8_900))
    #expect(sync.inStep, "\(sync)")
    #expect(fetchedOnce(harness) && harness.service.fetchedStarts.count == 3)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test(
    "a picture joining a play of audio alone reports its channel's gaps ahead, also those read already",
    arguments: [2_000, 4_500])
  func theFirstVideoReportsGaps(joiningAt: Int) throws {
    var options = ReplayFixtures.options(seconds: 12)
    options.videoGaps = [(offset: 5, length: 1)]
    let reference = try ReplayHarness(audio: true, options: options)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(joiningAt))
    let graph = try #require(harness.replay.activeGraph)
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // At 4.5 s the stretch without picture (5 s to 6 s) was read already: the detector found it among
    // what passed, and sends it as the gap a play built with the picture reports.
    let start = harness.recordingStart
    let expected = [MediaRange(startMilliseconds: start + 5_000, endMilliseconds: start + 6_000)]
    #expect(reference.log.gaps.map(\.range) == expected)
    #expect(harness.log.gaps.map(\.range) == expected, "\(harness.log.gaps)")
    // Reported as the position reaches it, as in the reference (it came behind what the joining branch
    // took from the history, 1.5 s late).
    let reported = try #require(positionAtFirstGap(harness.log))
    #expect(reported < start + 6_000 && positionAtFirstGap(reference.log).map { $0 < start + 6_000 } == true)
    #expect(reported >= start + 4_900, "the position was at \(reported - start) ms")
    // Every picture from the first keyframe after the join: a gap found late does not reset the decoder
    // in the middle of what follows it (14 pictures up to the next keyframe were lost so).
    let first = try #require(view.frames.first).media
    let skipped = Int((first - harness.media(0)) / 40_000) + (first < harness.media(5_000) ? 25 : 0)
    #expect(view.frames.count == 300 - skipped)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  /// The last position reported before the first gap (ms).
  private func positionAtFirstGap(_ log: ReplayLog) -> Int64? {
    let entries = log.entries
    guard let index = entries.firstIndex(where: { if case .gap = $0 { true } else { false } }) else { return nil }
    return entries[..<index].compactMap { if case .time(let time) = $0 { time.milliseconds } else { nil } }.last
  }

  @Test("a picture joining a play of audio alone just before a hole: the hole is reported once")
  func theFirstVideoBeforeAHole() throws {
    var options = ReplayFixtures.options(seconds: 12)
    options.gaps = [(offset: 5, length: 1)]
    let reference = try ReplayHarness(audio: true, options: options)
    #expect(reference.play(0, 12_000) == .ok)
    reference.runToEnd()
    let harness = try ReplayHarness(audio: true, options: options)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(4_500))
    let graph = try #require(harness.replay.activeGraph)
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    #expect(harness.replay.activeGraph === graph)
    harness.runToEnd()
    // The sound, driving until the picture's first frame (6 s), reported the hole (as the sound's
    // records bound it); the picture's copy of it, sent when its channel began to be judged, comes
    // after that frame and is not reported again.
    let hole = try #require(reference.log.gaps.first?.range)
    #expect(reference.log.gaps.count == 1 && harness.log.gaps.count == 1, "\(harness.log.gaps)")
    // Reported as the sound's gap, with the picture (bound by then, missing over it too) among its tracks (R71).
    #expect(
      harness.log.gaps.allSatisfy {
        $0.range.overlaps(hole) && $0.tracks == [TrackID(.audio, channel: 1), TrackID(.video, channel: 0)]
      }, "\(harness.log.gaps)")
    #expect(view.frames.first?.media == harness.media(6_000) && view.frames.count == 150)
    #expect(harness.log.completions == 1 && harness.log.errors.isEmpty)
  }

  @Test("a picture joining a play of audio alone at 4×: the sound is muted from then on, the picture paces the play")
  func theFirstVideoJoinsFast() throws {
    let harness = try ReplayHarness(seconds: 30, audio: true)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.play(0, 30_000) == .ok)
    #expect(harness.replay.setSpeed(.x4) == .ok)
    harness.run(for: .milliseconds(1_000))
    let graph = try #require(harness.replay.activeGraph)
    // The sound paces the play: its pacer hands frames on at 4× (none is heard off 1×).
    let presentedAudio = { graph.statistics().node(named: "Audio1Pacer")?.itemsOut ?? -1 }
    let before = presentedAudio()
    #expect(before > 50, "\(before)")
    let view = TimedRenderer(clock: harness.clock)
    harness.replay.bindVideo(channel: 0, renderer: view)
    #expect(harness.replay.activeGraph === graph)
    // The sound paces the play until the picture's first frame (the next keyframe) comes.
    for _ in 0..<500 where view.frames.isEmpty { harness.run(for: .milliseconds(10)) }
    harness.run(for: .milliseconds(10))
    let muted = presentedAudio()
    #expect(!view.frames.isEmpty && muted >= before)
    harness.runToEnd()
    // From then on the sound is muted, as in a play built with the picture: it presents nothing.
    #expect(presentedAudio() == muted, "\(before) \(muted) \(presentedAudio())")
    // 4× from the join to the end: the picture's frames 10 ms apart on the clock (40 ms of media each).
    let frames = Array(view.frames.dropFirst())
    #expect(frames.count > 100 && increasing(frames))
    let steps = Set(zip(frames, frames.dropFirst()).map { ($1.at - $0.at) * 4 - ($1.media - $0.media) })
    #expect(steps.allSatisfy { abs($0) <= 4 }, "\(steps.sorted().prefix(5))")
    #expect(try #require(frames.last).media == harness.media(29_960))
    #expect(fetchedOnce(harness) && harness.log.completions == 1 && harness.log.errors.isEmpty)
  }
}

extension ReplayHarness {
  /// A play of 12 s with sound and a second camera lens (channel 2), whose last picture (channel 0's) left
  /// 1.5 s in, in place: the sound drives on alone. Returns the harness and the play's graph.
  static func lastPictureLeft() throws -> (ReplayHarness, Pipeline) {
    var options = ReplayFixtures.options(seconds: 12)
    options.otherVideoChannels = [2]
    let harness = try ReplayHarness(audio: true, options: options)
    #expect(harness.play(0, 12_000) == .ok)
    harness.run(for: .milliseconds(1_500))
    let graph = try #require(harness.replay.activeGraph)
    harness.replay.unbind(harness.videoOutput)
    #expect(harness.replay.activeGraph === graph)
    return (harness, graph)
  }
}
