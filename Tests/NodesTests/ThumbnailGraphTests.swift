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
      in range: MediaRange, token: String, completion: @escaping @Sendable (Result<RecordingIndex, TiError>) -> Void
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

  @Test func aCueWhoseObjectHasNoKeyframeAfterItsStartReadsTheNextObjects() throws {
    // Keyframes every 4 s (0, 4, 8, …); cues every 6 s from 1 s (1, 7, 13, 19). The objects holding 1 s
    // and 13 s ([0, 3) and [12, 15)) have no keyframe after them: a second pass reads [3, 6) and
    // [15, 18) for those two cues, and nothing else.
    let (directory, service, start) = try library(gop: 100)
    let previews = try sheet(from: start + 1_000, to: start + 25_000, every: 6)
    try ThumbnailGraph.fill(previews, from: service, token: "t", channel: 0)
    #expect(previews.filled == [0, 1, 2, 3])
    #expect(service.starts == [0, 6_000, 12_000, 18_000, 3_000, 15_000], "\(service.starts)")
    #expect(previews.missingCues.isEmpty)
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
