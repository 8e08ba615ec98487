/// A consumer's word on how much of the stream it can use (GStreamer's QoS event, sent upstream).
///
/// The engine knows nothing about media: what "the items the rest depends on" are is the producer's
/// business (a video decoder decodes keyframes only; an audio decoder keeps its packets and decodes
/// nothing). A producer that cannot do less ignores the event; one that acted on it forwards nothing
/// further, since it already does the work upstream would save. At a flush a producer ends
/// ``Demand-swift.enum/essentialOnly`` itself (a seek starts a stretch whose every item counts; its
/// consumer, flushing in either order on another executor, need not say so); ``Demand-swift.enum/nothing``
/// holds until its consumer says otherwise.
public struct QualityOfService: Sendable, Equatable, CustomStringConvertible {
  /// What the consumer asks for.
  public enum Demand: Sendable, Equatable {
    /// Every item: the consumer keeps up.
    case everything
    /// Only the items that others depend on: the consumer falls behind and drops the rest anyway.
    case essentialOnly
    /// Nothing for now: the consumer presents nothing (muted audio off 1×); keep what is needed to
    /// resume without a seek.
    case nothing
  }

  /// What the consumer asks for.
  public var demand: Demand
  /// How late the consumer's last item was on its clock (negative when early), when it knows.
  public var lateness: Duration?

  /// A request for `demand`, with the lateness that prompted it.
  public init(_ demand: Demand, lateness: Duration? = nil) {
    self.demand = demand
    self.lateness = lateness
  }

  /// A short human-readable form, for logs and tests.
  public var description: String {
    let late = lateness.map { ", late \($0)" } ?? ""
    return "\(demand)\(late)"
  }
}
