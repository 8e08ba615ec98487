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

/// Issue 25's error model: a failure keeps where it arose, the node that reported it and the error
/// underneath, to the export's result and its log line; seed codes stay what they were.
@Suite("Errors keep their node, domain and cause")
struct ErrorCauseTests {
  @Test("a node's failure reaches the result with the node's name and the error underneath")
  func nodeFailureKeepsItsCause() throws {
    let directory = try TemporaryDirectory()
    let underneath = LibraryFailure.posix(EIO)
    let failure = TiError(.ioFailed, "the disk went away", domain: .storage, cause: underneath)
    let source = FailingSource(options: smallOptions(seconds: 6), failingAfter: 1, with: failure)
    let result = try ExportTerminationTests().run(
      source, range: MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 6000),
      output: directory.url.appendingPathComponent("e.mp4"))
    let error = try #require(result.error)
    #expect(error.code == .ioFailed && error.domain == .storage)
    #expect(error.node == source.name)
    #expect(error.cause as? LibraryFailure == underneath)
    #expect(error.detailedDescription.contains("in \(source.name)"))
    #expect(error.detailedDescription.contains("caused by libc \(EIO): \(String(cString: strerror(EIO)))"))
    // The seed's view is unchanged: the code is the report's cause.
    #expect(result.report.cause == TiErrorCode.ioFailed.rawValue)
  }

  @Test("libav failures carry their AVERROR; other errors become ioFailed and keep themselves")
  func causesOfLibrariesAndForeignErrors() throws {
    // A file that is not media: libavformat refuses it, and says why underneath.
    let directory = try TemporaryDirectory()
    let junk = directory.url.appendingPathComponent("junk.mp4")
    try Data(repeating: 0x42, count: 4096).write(to: junk)
    do {
      _ = try MediaFileSource.probe(path: junk.path)
      Issue.record("junk probed as media")
    } catch let error as MediaError {
      #expect(error.domain == .media, "\(error.detailedDescription)")
      let library = try #require(error.causes.first as? LibraryFailure, "\(error.detailedDescription)")
      #expect(library.library == "libav" && library.status < 0)
    }
    let foreign = TiError(CocoaError(.fileReadCorruptFile))
    #expect(foreign.code == .ioFailed && foreign.domain == .engine)
    #expect(foreign.cause is CocoaError)
    // Equality ignores the cause (a value for people, not identity).
    #expect(
      TiError(.ioFailed, "x", cause: LibraryFailure.posix(EIO))
        == TiError(.ioFailed, "x", cause: LibraryFailure.posix(ENOSPC)))
    #expect(TiError(.ioFailed, "x", domain: .storage) != TiError(.ioFailed, "x", domain: .media))
    // Every seed code has a domain.
    #expect(
      TiErrorCode.networkUnavailable.domain == .network && TiErrorCode.fileWriteFailed.domain == .storage
    )
  }
}
