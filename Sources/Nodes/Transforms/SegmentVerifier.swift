import Foundation
import PipelineGraph

/// Checks each fetched object against its index entry (exact size, SHA-256), decrypts it (AES-128-CBC
/// through OpenSSL) and parses it.
///
/// The hashing, decryption and parsing of several objects run at once on the pipeline's workers (the
/// executor only sequences them); results, and the events between them, leave in arrival order.
///
/// An object that fails becomes a `gap` event over the object's range, with its tracks and the reason
/// (`notFound`, `downloadFailed`, `integrityFailed`, `decryptionFailed`, `mediaUnreadable`,
/// `unsupportedMedia`); the stream goes on with the next object. Downstream, a gap means decoding must
/// restart at a keyframe.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle (read ``failures`` there, or once the
/// pipeline is idle); only the checks run on workers. A flush forgets the objects in flight.
public final class SegmentVerifier: Node {
  /// Consumes fetched objects.
  public typealias Input = FetchedObject
  /// Emits parsed objects.
  public typealias Output = SegmentObject

  private enum Slot {
    case waiting
    case done(Result<SegmentObject, MediaError>, RecordingIndex.Segment)
    case event(PipelineEvent)
  }

  /// The node's name.
  public let name = "SegmentVerifier"
  /// Objects verified at once on worker threads.
  public let parallelism: Int
  private var slots: [Int: Slot] = [:]
  private var nextSequence = 0
  private var nextToEmit = 0
  private var inFlight = 0
  /// Objects that failed, by reason (for statistics and tests).
  public private(set) var failures: [GapReason: Int] = [:]

  /// Creates a verifier that works on up to `parallelism` objects at once.
  public init(parallelism: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) throws {
    self.parallelism = max(1, parallelism)
  }

  /// Starts verifying one object on a worker.
  public func process(_ input: FetchedObject, context: NodeContext<SegmentObject>) throws {
    let sequence = nextSequence
    nextSequence += 1
    slots[sequence] = .waiting
    inFlight += 1
    if inFlight >= parallelism { context.suspendInput() }
    context.holdEndOfStream()
    let segment = input.segment
    // The worker takes the bytes over: decrypted in place when nothing else keeps them by then (the
    // engine lets go of its copy once this returns, most often before the worker gets to it; Replay's
    // objects fetched over the network are kept for its next graphs), else copied first.
    let handover = Handover(input)
    context.runOnWorker {
      Result { try SegmentObject(segment: segment, parsed: Self.verify(handover.take())) }.mapError {
        $0 as! MediaError
      }
    } then: { [unowned self] result in
      slots[sequence] = .done(result, segment)
      inFlight -= 1
      emitReady(context: context)
      if inFlight < parallelism { context.resumeInput() }
    }
  }

  /// Keeps events in order with the objects around them.
  public func handle(_ event: PipelineEvent, context: NodeContext<SegmentObject>) throws {
    guard inFlight > 0 else { return context.send(event) }
    slots[nextSequence] = .event(event)
    nextSequence += 1
  }

  private func emitReady(context: NodeContext<SegmentObject>) {
    while let slot = slots[nextToEmit] {
      switch slot {
      case .waiting:
        return
      case .event(let event):
        context.send(event)
      case .done(.success(let object), _):
        context.emit(object)
      case .done(.failure(let error), let segment):
        let reason = error.gapReason ?? .unknown
        failures[reason, default: 0] += 1
        context.send(.gap(RecordingGap(range: segment.range, tracks: segment.trackIDs, reasons: [reason])))
      }
      slots[nextToEmit] = nil
      nextToEmit += 1
    }
    if inFlight == 0 { context.releaseEndOfStream() }
  }

  private static func verify(_ input: consuming FetchedObject) throws -> ParsedSegment {
    do {
      let segment = input.segment
      let digestVerified = input.digestVerified
      let bytes = try (consume input).result.get()
      guard bytes.count == segment.size else {
        throw MediaError.gap(
          .integrityFailed, "object \(segment.id) has \(bytes.count) bytes, the index says \(segment.size)")
      }
      guard digestVerified || SHA256Digest.hexHash(bytes) == segment.sha256.lowercased() else {
        throw MediaError.gap(.integrityFailed, "object \(segment.id) does not match its SHA-256")
      }
      let parsed = try SegmentReader.parse(consume bytes, key: try segment.keyBytes(), cipher: try AES128CBC())
      guard parsed.header.range.overlaps(segment.range) else {
        throw MediaError.gap(
          .mediaUnreadable, "object \(segment.id) covers \(parsed.header.range), not \(segment.range)")
      }
      return parsed
    } catch let error as MediaError {
      throw error
    } catch {
      throw MediaError.gap(.unknown, "\(error)")
    }
  }

  /// Forgets objects in flight (their completions are dropped by the engine).
  public func flush(context: NodeContext<SegmentObject>) {
    slots.removeAll()
    nextSequence = 0
    nextToEmit = 0
    inFlight = 0
  }
}

/// An object handed from the executor to the one worker that verifies it: taken once, so that the worker
/// holds the only reference to its bytes.
private final class Handover: @unchecked Sendable {
  private var object: FetchedObject?

  init(_ object: FetchedObject) { self.object = object }

  /// The object; called once, by the worker (the executor made it before the worker was started).
  func take() -> FetchedObject {
    guard let object else { preconditionFailure("an object is verified once") }
    self.object = nil
    return object
  }
}
