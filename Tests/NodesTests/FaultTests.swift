import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing

@Suite("Fault builders produce the matching gap reasons")
struct FaultTests {
  let options = smallOptions()
  var start: Int64 { options.startMilliseconds }
  var whole: MediaRange { MediaRange(startMilliseconds: start, endMilliseconds: start + 9000) }
  func segment(_ index: Int) -> MediaRange {
    MediaRange(startMilliseconds: start + Int64(index) * 3000, endMilliseconds: start + Int64(index + 1) * 3000)
  }
  let video = TrackID(.video, channel: 0)
  let audio = TrackID(.audio, channel: 1)

  @Test("a missing object is notFound, and its successor's frames before a keyframe are noKeyFrame")
  func missingObject() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try LibraryFaults.removeObject(segment: 1, in: directory.url)
    let result = try decode(library: directory.url, range: whole)
    // Object 1 is [3 s, 6 s); object 2 starts mid-GOP at 6 s, the next keyframe is frame 150 = 6 s.
    // Frames 0..74 come from object 0; 150..224 from object 2 (starting on a keyframe: no noKeyFrame).
    #expect(result.gaps.first == RecordingGap(range: segment(1), tracks: [video, audio], reasons: [.notFound]))
    #expect(result.videoFrames.count == 75 + 75)
    #expect(result.gaps.count == 1)
  }

  @Test("losing an object before one that starts mid-GOP reports noKeyFrame up to its first keyframe")
  func noKeyFrameAfterLoss() throws {
    let directory = try TemporaryDirectory()
    var options = self.options
    options.segmentSeconds = 2  // objects [0,2) [2,4) [4,6) [6,8) [8,9); GOPs of 2 s start at 0, 2, 4…
    options.gop = 60  // keyframes at frames 0, 60, 120, 180 = 0, 2.4, 4.8, 7.2 s
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try LibraryFaults.removeObject(segment: 1, in: directory.url)  // [2 s, 4 s) lost
    let result = try decode(library: directory.url, range: whole)
    let reasons = result.gaps.map(\.reasons)
    #expect(reasons == [[.notFound], [.noKeyFrame]])
    // Object 2 = [4 s, 6 s) starts at frame 100; the first keyframe after the loss is frame 120 (4.8 s).
    #expect(result.gaps[1].range == MediaRange(startMilliseconds: start + 4000, endMilliseconds: start + 4800))
    #expect(result.gaps[1].tracks == [video])
    #expect(
      result.videoFrames.first(where: { $0.time.milliseconds >= start + 4000 })?.time.milliseconds == start + 4800)
    #expect(result.videoFrames.count == 50 + (225 - 120))
  }

  @Test("a corrupted object is integrityFailed")
  func corrupted() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try LibraryFaults.corruptObject(segment: 2, in: directory.url)
    let result = try decode(library: directory.url, range: whole)
    #expect(result.gaps == [RecordingGap(range: segment(2), tracks: [video, audio], reasons: [.integrityFailed])])
    #expect(result.videoFrames.count == 150)
  }

  @Test("a wrong key is decryptionFailed")
  func wrongKey() throws {
    let directory = try TemporaryDirectory()
    var options = self.options
    options.encrypt = true
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try LibraryFaults.replaceKey(segment: 0, in: directory.url)
    let result = try decode(library: directory.url, range: whole)
    #expect(result.gaps.first == RecordingGap(range: segment(0), tracks: [video, audio], reasons: [.decryptionFailed]))
    // Object 1 starts mid-GOP (frame 75); decoding restarts at frame 100.
    #expect(result.gaps.dropFirst().map(\.reasons) == [[.noKeyFrame]])
    #expect(result.videoFrames.count == 225 - 100)
  }

  @Test("a recording whose first object starts without a keyframe reports noKeyFrame from its start")
  func firstObjectWithoutKeyframe() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: options).write(to: directory.url)
    try LibraryFaults.stripLeadingKeyframe(segment: 0, in: directory.url)
    let result = try decode(library: directory.url, range: whole)
    #expect(result.gaps.first?.reasons == [.noKeyFrame])
    #expect(result.gaps.first?.range == MediaRange(startMilliseconds: start, endMilliseconds: start + 2000))
    #expect(result.videoFrames.first?.time.milliseconds == start + 2000)
  }

  @Test("a codec and resolution change at a boundary is announced and decoded")
  func formatChangeAtBoundary() throws {
    let directory = try TemporaryDirectory()
    var options = self.options
    options.videoChanges = [.init(offsetSeconds: 6, codec: .h265, width: 160, height: 120)]
    try LibrarySynthesizer(options: options).write(to: directory.url)
    let result = try decode(library: directory.url, range: whole)
    let changes = result.formatChanges.filter { $0.track == video }
    #expect(changes.map(\.format.codec) == [.h264, .h265])
    #expect(changes.last?.format.width == 160)
    #expect(changes.last?.time == MediaTime(milliseconds: start + 6000))
    #expect(result.videoFrames.count == 225)
    #expect(result.videoFrames.last?.frame.width == 160)
    #expect(result.gaps.isEmpty)
  }

  @Test("a range that starts between keyframes starts at the keyframe before it, even in the previous object")
  func rangeStartsAtPreviousKeyframe() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: options).write(to: directory.url)
    // 3.5 s lies in object 1 [3 s, 6 s); the keyframe before it is frame 50 = 2 s, in object 0.
    let range = MediaRange(startMilliseconds: start + 3500, endMilliseconds: start + 9000)
    let result = try decode(library: directory.url, range: range, startingAt: range.start)
    #expect(result.videoFrames.first?.time.milliseconds == start + 2000)
    #expect(result.gaps.isEmpty)
  }
}
