import PipelineGraph

/// The seven replay speeds of seed 000 (`TiCloudStorageReplaySpeed`), with its raw values (rules.md R1).
public enum ReplaySpeed: Int, Sendable, CaseIterable, CustomStringConvertible {
  /// 1×.
  case x1 = 0
  /// 2×.
  case x2 = 1
  /// 4×.
  case x4 = 2
  /// 8×.
  case x8 = 3
  /// 1/2×.
  case x0_5 = 4
  /// 1/4×.
  case x0_25 = 5
  /// 1/8×.
  case x0_125 = 6

  /// Media time per clock time.
  public var rate: PlaybackRate {
    switch self {
    case .x1: .normal
    case .x2: PlaybackRate(numerator: 2, denominator: 1)!
    case .x4: PlaybackRate(numerator: 4, denominator: 1)!
    case .x8: PlaybackRate(numerator: 8, denominator: 1)!
    case .x0_5: PlaybackRate(numerator: 1, denominator: 2)!
    case .x0_25: PlaybackRate(numerator: 1, denominator: 4)!
    case .x0_125: PlaybackRate(numerator: 1, denominator: 8)!
    }
  }

  /// `1/8`, `1/4`, `1/2`, `1`, `2`, `4`, `8` (the command line's spelling).
  public var description: String {
    switch self {
    case .x1: "1"
    case .x2: "2"
    case .x4: "4"
    case .x8: "8"
    case .x0_5: "1/2"
    case .x0_25: "1/4"
    case .x0_125: "1/8"
    }
  }

  /// The speed spelled `text` (`1/8` … `8`), or nil.
  public init?(_ text: String) {
    guard let speed = Self.allCases.first(where: { $0.description == text }) else { return nil }
    self = speed
  }
}
