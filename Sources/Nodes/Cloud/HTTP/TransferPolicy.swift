/// Timeouts and retries of one HTTP transfer (`spec/cloud-api.md`, "Retries").
///
/// A transfer gives up after ``attemptsWithoutProgress`` consecutive attempts that received no new
/// bytes (an attempt that made progress resets the count) or when ``deadline`` has passed; between
/// attempts it waits ``backoff``, doubled after each fruitless attempt up to ``maximumBackoff``.
public struct TransferPolicy: Sendable, Hashable {
  /// Longest wait for a connection.
  public var connectTimeout: Duration = .seconds(5)
  /// An attempt that receives nothing for this long has stalled.
  public var stallTimeout: Duration = .seconds(10)
  /// The whole transfer, retries included.
  public var deadline: Duration = .seconds(120)
  /// Consecutive attempts without new bytes before giving up.
  public var attemptsWithoutProgress = 3
  /// The first wait before a retry.
  public var backoff: Duration = .milliseconds(100)
  /// The longest wait before a retry.
  public var maximumBackoff: Duration = .seconds(2)

  /// The default policy.
  public init() {}
}
