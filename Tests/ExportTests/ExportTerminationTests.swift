import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import Testing
import TiCloudStorage

/// Emits a synthetic recording's objects, then fails with `error` after `limit` of them (a token that
/// expires in the middle of an export).
final class FailingSource: SourceNode {
  typealias Output = FetchedObject
  let inner: SyntheticSource
  let limit: Int
  let error: TiError
  var emitted = 0
  init(options: LibrarySynthesizer.Options, failingAfter limit: Int, with error: TiError) {
    inner = SyntheticSource(options: options)
    self.limit = limit
    self.error = error
  }
  func start(context: NodeContext<FetchedObject>) throws { try inner.start(context: context) }
  func produce(context: NodeContext<FetchedObject>) throws -> ProduceResult {
    guard emitted < limit else { throw error }
    emitted += 1
    return try inner.produce(context: context)
  }
}

@Suite("Export terminations")
struct ExportTerminationTests {
  func run(_ source: FailingSource, range: MediaRange, output: URL) throws -> ExportResult {
    try ExportJob(
      request: .init(
        range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1), output: output),
      source: source, completion: { _ in }
    ).resultWithinDeadline()
  }

  @Test("E31: an error after media was written interrupts: ok, a file, cause = the error, the rest unprocessed")
  func interrupted() throws {
    let directory = try TemporaryDirectory()
    let output = directory.url.appendingPathComponent("i.mp4")
    let source = FailingSource(
      options: smallOptions(seconds: 12), failingAfter: 2, with: TiError(.tokenExpired, "expired"))
    let result = try run(source, range: range(0, 12000), output: output)
    #expect(result.code == .ok)
    #expect(result.file == output)
    #expect(result.report.termination == .interrupted)
    #expect(result.report.cause == 6014)
    #expect(!result.report.complete)
    #expect(result.report.unprocessedRanges.last?.endMs == recordingStart + 12000)
    #expect(result.report.coveredDurationMs >= 5000)
    _ = try expectPlayable(result)
  }

  @Test("E31: an error before anything was written fails: the error's code, no file")
  func failed() throws {
    let directory = try TemporaryDirectory()
    let output = directory.url.appendingPathComponent("f.mp4")
    let source = FailingSource(
      options: smallOptions(seconds: 6), failingAfter: 0, with: TiError(.permissionDenied, "no"))
    let result = try run(source, range: range(0, 6000), output: output)
    #expect(result.code == .permissionDenied)
    #expect(result.file == nil)
    #expect(result.report.termination == .failed)
    #expect(result.report.cause == 6024)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  @Test("an output that cannot be created is fileWriteFailed (6046), no file")
  func unwritableOutput() throws {
    let directory = try TemporaryDirectory()
    let output = directory.url.appendingPathComponent("missing/dir/x.mp4")
    let source = FailingSource(options: smallOptions(seconds: 6), failingAfter: 10, with: TiError(.ioFailed, "-"))
    let result = try run(source, range: range(0, 6000), output: output)
    #expect(result.code == .fileWriteFailed)
    #expect(result.file == nil)
    #expect(result.report.termination == .failed)
  }
}
