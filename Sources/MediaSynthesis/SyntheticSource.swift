import Foundation
import Nodes
import PipelineGraph

/// Generates a recording in memory and emits its objects as if they had been fetched: the test
/// harness's injector, upstream of the verifier, with no files and no network.
///
/// Each `produce` encodes one object (real H.264/H.265 and AAC/G.711); memory stays bounded by one object.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush starts the recording over.
public final class SyntheticSource: SourceNode {
  /// Emits fetched objects.
  public typealias Output = FetchedObject

  /// The node's name.
  public let name = "SyntheticSource"
  private let options: LibrarySynthesizer.Options
  private var recording: SyntheticRecording?
  private var lastEnd: Int64?

  /// Creates a source that generates the recording `options` describes.
  public init(options: LibrarySynthesizer.Options) {
    self.options = options
  }

  /// Prepares the encoders.
  public func start(context: NodeContext<FetchedObject>) throws {
    recording = try SyntheticRecording(options: options)
  }

  /// Encodes and emits the next object (and a `noRecording` gap before it when a hole precedes it).
  public func produce(context: NodeContext<FetchedObject>) throws -> ProduceResult {
    guard let recording, let (segment, object) = try recording.nextObject() else { return .finished }
    if let lastEnd, segment.startMs > lastEnd {
      let hole = MediaRange(startMilliseconds: lastEnd, endMilliseconds: segment.startMs)
      context.send(.gap(RecordingGap(range: hole, tracks: [], reasons: [.noRecording])))
    }
    lastEnd = segment.endMs
    context.emit(FetchedObject(segment: segment, result: .success(object)))
    return .produced
  }

  /// Starts the recording over.
  public func flush(context: NodeContext<FetchedObject>) {
    recording = try? SyntheticRecording(options: options)
    lastEnd = nil
  }
}
