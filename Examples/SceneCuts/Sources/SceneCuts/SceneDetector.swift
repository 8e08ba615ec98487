import Foundation
import Nodes
import PipelineGraph

/// Finds scene changes on decoded pictures — a picture whose luma differs from the one before by more
/// than a threshold (mean absolute difference, 0…255) — and decides, for a `Valve` on the packets of
/// the same stream, to keep the pictures from `lead` before each change to `keep` after it.
///
/// A picture is decided once the pictures `lead` after it were seen (a change there keeps it): the
/// valve's look-ahead must exceed `lead` plus what the decoding branch holds.
///
/// Confined to its pipeline's executor; read ``changes`` once the pipeline has ended.
public final class SceneDetector: Node {
  /// Consumes pictures (gray or a YUV format: the first plane is read).
  public typealias Input = DecodedFrame
  /// A sink.
  public typealias Output = Never

  /// A scene change: where, and how large.
  public struct Change: Sendable, Equatable {
    /// The first picture of the new scene.
    public var time: MediaTime
    /// Its mean absolute luma difference from the picture before.
    public var difference: Double
  }

  /// The node's name.
  public let name = "SceneDetector"
  /// The decisions the valve follows.
  public let decisions: ValveDecisions
  /// The smallest difference that is a scene change.
  public let threshold: Double
  /// How long after a change is kept.
  public let keep: MediaDuration
  /// How long before a change is kept.
  public let lead: MediaDuration
  /// Pictures seen, not yet decided.
  private var undecided: [MediaRange] = []
  /// The changes found, in order.
  public private(set) var changes: [Change] = []
  private var previous: [UInt8]?

  /// A detector writing into `decisions`.
  public init(
    decisions: ValveDecisions, threshold: Double = 30, lead: MediaDuration = .microseconds(500_000),
    keep: MediaDuration = .microseconds(1_000_000)
  ) {
    self.decisions = decisions
    self.threshold = threshold
    self.lead = lead
    self.keep = keep
  }

  /// Compares the picture with the one before and decides whether it is kept.
  public func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    guard input.track.kind == .video else { return }
    // Every fourth sample of every fourth row: enough to tell scenes apart, 16 times cheaper.
    let luma = input.withPlanes { planes -> [UInt8] in
      guard let plane = planes.first else { return [] }
      return stride(from: 0, to: plane.height, by: 4).flatMap { y in
        let row = plane.row(y)
        return stride(from: row.startIndex, to: row.endIndex, by: 4).map { row[$0] }
      }
    }
    defer { previous = luma }
    let end = input.time.advanced(by: input.duration, notAfter: MediaTime(microseconds: .max))
    if let previous, previous.count == luma.count, !luma.isEmpty {
      let total = zip(luma, previous).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
      let difference = Double(total) / Double(luma.count)
      if difference >= threshold { changes.append(Change(time: input.time, difference: difference)) }
    }
    undecided.append(MediaRange(start: input.time, end: end))
    decide(through: (try? input.time - lead) ?? input.time)
  }

  /// Decides the pictures that start before `time`.
  private func decide(through time: MediaTime) {
    while let picture = undecided.first, picture.start < time {
      undecided.removeFirst()
      let kept = changes.contains { change in
        picture.start >= ((try? change.time - lead) ?? change.time)
          && picture.start < change.time.advanced(by: keep, notAfter: MediaTime(microseconds: .max))
      }
      decisions.decide(picture, keep: kept)
    }
  }

  /// Everything is decided.
  public func finish(context: NodeContext<Never>) throws {
    decide(through: MediaTime(microseconds: .max))
    decisions.finish()
  }
}
