import Dispatch
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// The listing queries of seed 000 (`listRecordings`, `listRecordingDays`; rules.md group Q) over any
/// `RecordingService`.
///
/// Every outcome, argument errors included, arrives through the completion, exactly once and never
/// inside the call; a failed query carries no ranges or days.
///
/// Stateless: call from any thread. The completion runs on the thread the service completes on (a
/// global queue for `CloudService` listings, a local library's workers), or a Dispatch global queue for
/// an argument error.
public enum RecordingQueries {
  /// The longest span of `listRecordings`: 10 days.
  public static let maximumSpanMilliseconds: Int64 = 864_000_000
  /// The most merged ranges one query returns; more is `rangeTooLarge`, never a partial result.
  public static let maximumRanges = 10_000
  /// The time zone of `listRecordingDays` unless one is given.
  public static let defaultTimeZone = "Asia/Shanghai"

  /// The recording ranges of `[startMs, endMs)`: clipped to it, ascending, overlapping and abutting
  /// ranges merged, holes kept.
  @discardableResult
  public static func listRecordings(
    service: any RecordingService, token: String, startMs: Int64, endMs: Int64,
    completion: @escaping @Sendable (Result<[MediaRange], TiError>) -> Void
  ) -> ServiceRequest {
    let range: MediaRange
    do {
      range = try validatedRange(startMs, endMs)
    } catch {
      return deliverLater(.failure(error), completion)
    }
    return service.listSegments(in: range, token: token) { result in
      completion(
        result.mapError { TiError($0) }.flatMap { index in Result { () throws(TiError) in try merged(index, in: range) }
        })
    }
  }

  /// `listRecordings` as an async call; cancelling the task ends it with `cancelled` (6115).
  public static func listRecordings(service: any RecordingService, token: String, startMs: Int64, endMs: Int64) async
    -> Result<[MediaRange], TiError>
  {
    await cancellable { completion in
      listRecordings(service: service, token: token, startMs: startMs, endMs: endMs, completion: completion)
    }
  }

  /// Every day from `startDate` to `endDate` (inclusive, strict `YYYY-MM-DD`, at most 31) with whether a
  /// recording touches it between its local midnights in `timeZoneId`.
  @discardableResult
  public static func listRecordingDays(
    service: any RecordingService, token: String, startDate: String, endDate: String,
    timeZoneId: String = defaultTimeZone, completion: @escaping @Sendable (Result<[RecordingDay], TiError>) -> Void
  ) -> ServiceRequest {
    let calendarDays: CalendarDays
    do {
      calendarDays = try CalendarDays(from: startDate, to: endDate, timeZoneId: timeZoneId)
    } catch {
      return deliverLater(.failure(TiError(error)), completion)
    }
    let whole = MediaRange(start: calendarDays.days.first!.span.start, end: calendarDays.days.last!.span.end)
    // Listings span at most 10 days: 31 days take four, one after the other.
    var spans: [MediaRange] = []
    var start = whole.start
    while start < whole.end {
      let end = start.advanced(by: .microseconds(maximumSpanMilliseconds * 1000), notAfter: whole.end)
      spans.append(MediaRange(start: start, end: end))
      start = end
    }
    let chunks = spans
    let current = Locked<ServiceRequest?>(nil)
    let cancelled = Atomic<Bool>(false)
    @Sendable func list(_ position: Int, _ found: [MediaRange]) {
      guard position < chunks.count else {
        let days = calendarDays.days.map { day in
          RecordingDay(date: day.date, hasRecording: found.contains { $0.overlaps(day.span) })
        }
        return completion(.success(days))
      }
      guard !cancelled.load(ordering: .acquiring) else {
        return completion(.failure(TiError(.cancelled, "the query was cancelled")))
      }
      let request = service.listSegments(in: chunks[position], token: token) { result in
        switch result {
        case .failure(let error): completion(.failure(TiError(error)))
        case .success(let index): list(position + 1, found + index.mergedRanges(in: chunks[position]))
        }
      }
      current.withLock { $0 = request }
    }
    list(0, [])
    return ServiceRequest {
      cancelled.store(true, ordering: .releasing)
      current.withLock { $0 }?.cancel()
    }
  }

  /// `listRecordingDays` as an async call; cancelling the task ends it with `cancelled` (6115).
  public static func listRecordingDays(
    service: any RecordingService, token: String, startDate: String, endDate: String,
    timeZoneId: String = defaultTimeZone
  ) async -> Result<[RecordingDay], TiError> {
    await cancellable { completion in
      listRecordingDays(
        service: service, token: token, startDate: startDate, endDate: endDate, timeZoneId: timeZoneId,
        completion: completion)
    }
  }

  /// `[startMs, endMs)` when it is a valid listing span: `invalidArgument` unless start < end and both
  /// are representable, `rangeTooLarge` beyond 10 days.
  static func validatedRange(_ startMs: Int64, _ endMs: Int64) throws(TiError) -> MediaRange {
    guard MediaTime.validMilliseconds.contains(startMs), MediaTime.validMilliseconds.contains(endMs) else {
      throw TiError(.invalidArgument, "the times must lie within ±146,000 years of 1970")
    }
    guard startMs < endMs else { throw TiError(.invalidArgument, "startTimeMs must be before endTimeMs") }
    guard endMs - startMs <= maximumSpanMilliseconds else {
      throw TiError(.rangeTooLarge, "a query spans at most 10 days (864,000,000 ms)")
    }
    return MediaRange(startMilliseconds: startMs, endMilliseconds: endMs)
  }

  /// The merged ranges of a listing, or `rangeTooLarge` when more than 10,000 remain.
  static func merged(_ index: RecordingIndex, in range: MediaRange) throws(TiError) -> [MediaRange] {
    let ranges = index.mergedRanges(in: range)
    guard ranges.count <= maximumRanges else {
      throw TiError(
        .rangeTooLarge, "\(ranges.count) ranges remain after merging; at most \(maximumRanges) are returned")
    }
    return ranges
  }

  private static func deliverLater<Value: Sendable>(
    _ result: Result<Value, TiError>, _ completion: @escaping @Sendable (Result<Value, TiError>) -> Void
  ) -> ServiceRequest {
    DispatchQueue.global().async { completion(result) }
    return ServiceRequest {}
  }

  private static func cancellable<Value: Sendable>(
    _ start: (@escaping @Sendable (Result<Value, TiError>) -> Void) -> ServiceRequest
  ) async -> Result<Value, TiError> {
    let request = Locked<ServiceRequest?>(nil)
    let delivered = Locked<(CheckedContinuation<Result<Value, TiError>, Never>?, done: Bool)>((nil, false))
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        delivered.withLock { $0.0 = continuation }
        let started = start { result in
          let waiting = delivered.withLock { state -> CheckedContinuation<Result<Value, TiError>, Never>? in
            guard !state.done else { return nil }
            state.done = true
            return state.0
          }
          waiting?.resume(returning: result)
        }
        request.withLock { $0 = started }
        if Task.isCancelled { started.cancel() }
      }
    } onCancel: {
      request.withLock { $0 }?.cancel()
    }
  }
}
