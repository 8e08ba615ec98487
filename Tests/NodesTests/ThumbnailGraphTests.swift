import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Synchronization
import Testing

/// `ThumbnailGraph` reads the objects that hold a cue's start first, and the objects after a cue's start
/// only for the cues those left without a picture (issue 26: a day of previews in seconds).
@Suite struct ThumbnailGraphTests {
  /// A service that notes which objects are fetched (ms after the recording's start), in order.
  final class Counting: RecordingService {
    let wrapped: LocalLibraryService
    let origin: Int64
    private let fetched = Mutex<[Int64]>([])
    init(_ wrapped: LocalLibraryService, origin: Int64) {
      self.wrapped = wrapped
      self.origin = origin
    }
    var endpoint: String { wrapped.endpoint }
    var starts: [Int64] { fetched.withLock { $0 } }
    func listSegments(
      in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, MediaError>) -> Void
    ) -> ServiceRequest { wrapped.listSegments(in: range, token: token, completion: completion) }
    func fetchObject(_ segment: RecordingIndex.Segment, completion: @escaping @Sendable (ObjectFetch) -> Void)
      -> ServiceRequest
    {
      fetched.withLock { $0.append(segment.startMs - origin) }
      return wrapped.fetchObject(segment, completion: completion)
    }
  }

  /// 24 s in 3-second objects, a keyframe every `gop` frames at 25 fps.
  private func library(gop: Int) throws -> (TemporaryDirectory, Counting, Int64) {
    let directory = try TemporaryDirectory("thumbnail-graph")
    var options = smallOptions(seconds: 24)
    options.gop = gop
    options.audioCodec = nil
    try LibrarySynthesizer(options: options).write(to: directory.url)
    let start = options.startMilliseconds
    return (directory, Counting(LocalLibraryService(directory: directory.url), origin: start), start)
  }

  private func sheet(from: Int64, to: Int64, every seconds: Int64) throws -> ThumbnailSheet {
    try ThumbnailSheet(
      range: MediaRange(startMilliseconds: from, endMilliseconds: to), interval: .microseconds(seconds * 1_000_000))
  }

  @Test func keyframesAtTheCuesStartsNeedOneObjectACue() throws {
    // Keyframes every 2 s; a cue every 6 s from 0: each cue's start is a keyframe of the object holding it.
    let (directory, service, start) = try library(gop: 50)
    let previews = try sheet(from: start, to: start + 24_000, every: 6)
    try ThumbnailGraph.fill(previews, from: service, token: "t", channel: 0)
    #expect(previews.filled == [0, 1, 2, 3])
    #expect(service.starts == [0, 6_000, 12_000, 18_000], "\(service.starts)")
    withExtendedLifetime(directory) {}
  }

  @Test func aCueWhoseObjectHasNoKeyframeAfterItsStartReadsTheObjectsAfterIt() throws {
    // Keyframes every 4 s (0, 4, 8, …); cues every 6 s from 1 s (1, 7, 13, 19). The objects holding 7 s
    // and 19 s have keyframes after them (8 s, 20 s); those holding 1 s and 13 s ([0, 3), [12, 15))
    // have none, and what follows them was skipped: a second pass reads every object within 6 s of those
    // two cues (3 s and 15 s are theirs).
    let (directory, service, start) = try library(gop: 100)
    let previews = try sheet(from: start + 1_000, to: start + 25_000, every: 6)
    try ThumbnailGraph.fill(previews, from: service, token: "t", channel: 0)
    #expect(previews.filled == [0, 1, 2, 3])
    #expect(
      service.starts == [0, 6_000, 12_000, 18_000, 0, 3_000, 6_000, 12_000, 15_000, 18_000], "\(service.starts)")
    #expect(previews.missingCues.isEmpty)
    withExtendedLifetime(directory) {}
  }

  @Test func aKeyframeAfterASkippedObjectIsNotTakenForACueBegunBeforeIt() throws {
    // Keyframes every 3 s (0, 3, 6, …); cues every 6 s from 1 s. The object holding 7 s starts with a
    // keyframe at 6 s, in the first cue, but the skipped [3, 6) holds an earlier one (3 s): the first
    // pass takes neither for that cue (nor 12 s for the second, nor 18 s for the third), and the second
    // reads everything within 6 s of the cues — the pictures one pass would give (3, 9, 15, 21 s; judged
    // by ThumbnailsCommandTests).
    let (directory, service, start) = try library(gop: 75)
    let previews = try sheet(from: start + 1_000, to: start + 25_000, every: 6)
    try ThumbnailGraph.fill(previews, from: service, token: "t", channel: 0)
    #expect(previews.filled == [0, 1, 2, 3])
    let second = stride(from: 0, to: 24_000, by: 3_000).map { Int64($0) }
    #expect(service.starts == [0, 6_000, 12_000, 18_000] + second, "\(service.starts)")
    withExtendedLifetime(directory) {}
  }

  @Test func cuesInAGapStayEmptyAndCostOnlyTheObjectsWithinReach() throws {
    // Keyframes every 2 s, a cue every 2 s from 0 over 30 s: the recording ends at 24 s, so the last three
    // cues have no picture; the second pass finds nothing to read for them.
    let (directory, service, start) = try library(gop: 50)
    let previews = try sheet(from: start, to: start + 30_000, every: 2)
    try ThumbnailGraph.fill(previews, from: service, token: "t", channel: 0)
    #expect(previews.filled == Array(0..<12))
    #expect(previews.missingCues == [12, 13, 14])
    #expect(service.starts == stride(from: 0, to: 24_000, by: 3_000).map { Int64($0) }, "\(service.starts)")
    withExtendedLifetime(directory) {}
  }
}
