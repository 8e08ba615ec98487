/// Faults the reference server injects for tests and benchmarks (`tipipe serve --help` lists each).
///
/// Per-object counters ("the first N requests") count requests for the same object id, so a client
/// that retries meets the fault N times and then succeeds.
public struct ServerFaults: Sendable, Hashable {
  /// The first N requests of each object answer `failStatus`.
  public var failFirst = 0
  /// Each object request answers `failStatus` with this probability.
  public var failRate = 0.0
  /// The status of injected failures (500 by default; 429 and other codes too).
  public var failStatus = 500
  /// The first N requests of each object send half the body and close the connection.
  public var truncateFirst = 0
  /// Each object request is truncated with this probability.
  public var truncateRate = 0.0
  /// Object requests are answered whole (200), whatever their `Range` asks: a server (or a proxy) that
  /// does not do ranges.
  public var ignoresRanges = false
  /// The first N requests of each object close the connection without an answer.
  public var resetFirst = 0
  /// The first N requests of each object answer 403 `signature_expired`, as if the URL had expired.
  public var expireSignaturesFirst = 0
  /// Delay before every answer, in milliseconds.
  public var latencyMilliseconds = 0
  /// Object bodies are sent at most this fast, in bytes per second (0: unlimited).
  public var bytesPerSecond = 0
  /// Listing requests accepted before every token counts as expired (nil: never).
  public var tokenRequests: Int?
  /// Every listing answers this status with a JSON error body (nil: normal answers).
  public var listingStatus: Int?
  /// Every listing answers 200 with a body that is not JSON.
  public var malformedListing = false
  /// Objects (by id) whose every request sends its first ``stallBytes`` bytes, then nothing for
  /// ``stallSeconds``, then closes without the rest: one object that stalls while the others are served.
  public var stalledObjects: Set<String> = []
  /// What a stalled object's request sends before it stalls.
  public static let stallBytes: Int64 = 1000
  /// How long a stalled object's request stays silent before it closes, in seconds (10 by default); a
  /// stall ends at once when the server stops. Tests that must not race a stall's end make it long.
  public var stallSeconds = 10
  /// The seed of the random faults.
  public var seed: UInt64 = 1

  /// No faults.
  public init() {}

  /// True when a fault needs a thread per connection (its sleeps must not hold other connections).
  var sleeps: Bool { latencyMilliseconds > 0 || bytesPerSecond > 0 || !stalledObjects.isEmpty }
}
