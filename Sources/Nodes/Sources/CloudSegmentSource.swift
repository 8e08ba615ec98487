import Foundation
import PipelineGraph

/// The library source: lists a range through a ``RecordingService`` — the cloud API over HTTP
/// (``CloudService``) or a `file://` library (``LocalLibraryService``, or ``init(directory:range:prefetchBytes:workers:)``)
/// — in windows of about an hour as it goes, downloads the objects ahead of what downstream takes (bounded in bytes), and emits them
/// in order as ``FetchedObject``s, with a `noRecording` gap event for every stretch no object covers.
///
/// - The token is the one given at creation: the operation keeps it whatever the caller later holds.
/// - An object whose presigned URL is refused (403, e.g. expired) is listed again once and fetched
///   with the fresh URL; a second refusal makes it a `downloadFailed` gap.
/// - Per-object failures (`notFound`, `downloadFailed`, `integrityFailed`) travel as failed objects and
///   become gaps downstream; a listing failure (token expired, permission, service, network) or a
///   network failure fails the source when the stream reaches it: what was fetched before it still goes
///   downstream, and the operation ends there.
/// - A stall budget bounds the operation as a whole: when its transfers and listings together receive
///   fewer than ``minimumProgress`` bytes over `stallBudget` (30 s by default, wall-clock), the objects
///   then in flight become `downloadFailed` gaps and the operation goes on (one object that stalls while
///   the cloud serves the others costs its own stretch, not the rest); a listing that stalls, or a second
///   stall with nothing received in between, means the cloud as a whole does not answer: everything in
///   flight is cancelled and the source fails with `serviceUnavailable` (an export then ends with what it
///   wrote). Each transfer's own retries and deadline still apply within it.
/// - Flushing or stopping cancels every listing and transfer in flight at once.
/// - ``readsAhead`` off, it fetches only the object it emits next (a player's first frame gets the disk,
///   the network and the CPU to itself); on, up to `prefetchBytes` ahead.
///
/// The object before the range is included when it abuts the first one: the keyframe at or before the
/// range start may lie there.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush starts again from the
/// range's start, or from a seek's target (`NodeContext/seekTarget`) to the range's end. The
/// service's completions come back to that executor through the node's context. ``readsAhead`` may be
/// set from any thread.
public final class CloudSegmentSource: SourceNode {
  /// Emits fetched objects.
  public typealias Output = FetchedObject

  /// The node's name.
  public let name = "CloudSegmentSource"
  private let service: any RecordingService
  private let requested: MediaRange
  /// What the current flush generation reads: the requested range, or from a seek's target on.
  private var range: MediaRange
  private let token: String
  private let prefetchBytes: Int
  private let window: MediaDuration
  private let maximumTransfers: Int

  private var plan: [Step] = []
  private var seen: Set<String> = []
  private var covered: MediaTime
  private var listedUntil: MediaTime
  private var listing: ServiceRequest? { didSet { watchNetwork() } }
  private var lookedBack = false
  private var nextToRequest = 0
  private var nextToEmit = 0
  private var arrived: [Int: FetchedObject] = [:]
  // Failures that end the operation, raised when the stream reaches them, so that what was fetched before
  // them still goes downstream: the next window's listing, or an object's transfer (network, DNS).
  private var listingFailure: MediaError?
  private var transferFailures: [Int: MediaError] = [:]
  private var transfers: [Int: ServiceRequest] = [:] { didSet { watchNetwork() } }
  /// The operation's stall budget (nil: none) and its watch while the source runs.
  private let stallBudget: Duration?
  private var stallWatch: StallWatch?
  /// The stall that ended the operation, thrown at the next produce.
  private var stall: MediaError?
  /// A stall cost the objects then in flight, and nothing arrived since: another one ends the operation.
  private var stalledSinceArrival = false
  /// Positions whose transfer a stall gave up: what their cancelled requests still report is dropped.
  private var givenUp: Set<Int> = []
  /// The fewest bytes the operation must receive over its stall budget.
  public static let minimumProgress = 1024
  private var relisted: Set<Int> = []
  private var bytesInFlight = 0
  /// What other threads share with the executor: the read-ahead switch, and how to wake the source when
  /// it turns on (replaced at start and at each flush: a completion of an older generation is dropped).
  private let control: Locked<(readsAhead: Bool, wake: Completion<Void>?)>

  /// Which listed objects are fetched (nil: all): a flow that needs only some moments of the range
  /// (thumbnails) skips the rest, which then read as stretches no object covers.
  public let objectFilter: (@Sendable (RecordingIndex.Segment) -> Bool)?

  /// Fetches `[range.start, range.end)` from `service` with `token`, keeping at most `prefetchBytes`
  /// of objects ahead of downstream, with at most `maximumTransfers` transfers at once, and listing
  /// `window` of recording at a time; with `readsAhead` false, fetching only the object it emits next
  /// until ``readsAhead`` is turned on; only the objects `objectFilter` accepts.
  public init(
    service: any RecordingService, range: MediaRange, token: String, prefetchBytes: Int = 32 << 20,
    maximumTransfers: Int = 4, window: MediaDuration = .microseconds(3_600_000_000), readsAhead: Bool = true,
    stallBudget: Duration? = .seconds(30), objectFilter: (@Sendable (RecordingIndex.Segment) -> Bool)? = nil
  ) {
    self.objectFilter = objectFilter
    self.stallBudget = stallBudget
    control = Locked((readsAhead, nil))
    self.maximumTransfers = max(1, maximumTransfers)
    self.service = service
    requested = range
    self.range = range
    self.token = token
    self.prefetchBytes = prefetchBytes
    self.window = window
    covered = range.start
    listedUntil = range.start
  }

  /// One step of a read plan: an object, or a stretch no object covers.
  enum Step {
    case object(RecordingIndex.Segment)
    case hole(MediaRange)
  }

  /// Reads `[range.start, range.end)` from the `file://` library at `directory` (`index.json` beside
  /// `objects/`), keeping at most `prefetchBytes` of objects read ahead of downstream: a
  /// ``LocalLibraryService`` reading on `workers` (pass the pipeline's, e.g. a `ManualExecutor` in a
  /// deterministic test), with no stall budget (a disk does not stall the way a network does). A library
  /// without a readable index fails the source at its first listing.
  public convenience init(
    directory: URL, range: MediaRange, prefetchBytes: Int = 32 << 20, workers: any WorkerExecutor = WorkerPool.shared
  ) {
    self.init(
      service: LocalLibraryService(directory: directory, workers: workers), range: range, token: "local",
      prefetchBytes: prefetchBytes, stallBudget: nil)
  }

  /// Whether the source fetches up to its `prefetchBytes` ahead of what it emits (else only the object
  /// it emits next). Turning it on wakes the source. Callable from any thread.
  public var readsAhead: Bool {
    get { control.withLock { $0.readsAhead } }
    set {
      let wake = control.withLock { control -> Completion<Void>? in
        defer { control.readsAhead = newValue }
        return newValue && !control.readsAhead ? control.wake : nil
      }
      wake?(())
    }
  }

  /// Lists the first window.
  public func start(context: NodeContext<FetchedObject>) throws {
    arm(context)
    listNextWindow(context: context)
  }

  /// A new watch of the network for this flush generation (the old one's verdict is dropped with it).
  private func armStallWatch(_ context: NodeContext<FetchedObject>) {
    stallWatch?.cancel()
    stallWatch = nil
    guard let stallBudget else { return }
    let stalled = context.makeCompletion { [unowned self] (bytes: Int) in
      guard stall == nil else { return }
      let what = "the cloud sent \(bytes) bytes in \(stallBudget) (at least \(Self.minimumProgress) are needed)"
      // The verdict was reached on another thread: what it judged may have ended since (a transfer that
      // completed on the executor first). With nothing left in flight there is nothing to give up.
      if listing == nil && transfers.isEmpty {
        armStallWatch(context)
        return
      }
      // Something came in since the last stall (a window of this watch had its bytes): not a second one.
      if stallWatch?.sawProgress == true { stalledSinceArrival = false }
      guard listing == nil, !transfers.isEmpty, !stalledSinceArrival else {
        stall = MediaError(.serviceUnavailable, "\(what): the operation gives up")
        cancelAll()
        context.wake()
        return
      }
      // The objects in flight are given up as gaps; the next ones are fetched under a new watch.
      stalledSinceArrival = true
      for (position, request) in transfers {
        givenUp.insert(position)
        request.cancel()
        guard case .object(let segment) = plan[position] else { continue }
        arrived[position] = FetchedObject(
          segment: segment, result: .failure(MediaError.gap(.downloadFailed, "\(what): the object is given up")))
      }
      transfers.removeAll()
      armStallWatch(context)
      requestAhead(context: context)
      context.wake()
    }
    stallWatch = StallWatch(budget: stallBudget, minimumBytes: Self.minimumProgress) { stalled($0) }
    watchNetwork()
  }

  private func watchNetwork() {
    stallWatch?.watch(Array(transfers.values) + (listing.map { [$0] } ?? []))
  }

  /// The wake-up holds the node's partition, which holds the node: dropped once the source has nothing
  /// more to read (finished, stopped), so a graph nobody stops is not kept alive by it. A flush re-arms.
  private func disarm() {
    control.withLock { $0.wake = nil }
    stallWatch?.cancel()
    stallWatch = nil
  }

  private func arm(_ context: NodeContext<FetchedObject>) {
    armStallWatch(context)
    let wake = context.makeCompletion { [unowned self] (_: Void) in
      requestAhead(context: context)
      context.wake()
    }
    control.withLock { $0.wake = wake }
  }

  /// Emits the next step in order, listing and fetching ahead.
  public func produce(context: NodeContext<FetchedObject>) throws -> ProduceResult {
    if let stall {
      disarm()
      throw stall
    }
    requestAhead(context: context)
    guard nextToEmit < plan.count else {
      if let listingFailure { throw listingFailure }
      guard listedUntil >= range.end && listing == nil else { return .waiting }
      disarm()
      return .finished
    }
    switch plan[nextToEmit] {
    case .hole(let hole):
      context.send(.gap(RecordingGap(range: hole, tracks: [], reasons: [.noRecording])))
    case .object:
      if let failure = transferFailures[nextToEmit] { throw failure }
      guard let object = arrived.removeValue(forKey: nextToEmit) else { return .waiting }
      bytesInFlight -= object.segment.prefetchSize
      context.emit(object)
    }
    nextToEmit += 1
    return .produced
  }

  // MARK: Listing

  private func listNextWindow(context: NodeContext<FetchedObject>) {
    guard listing == nil, listingFailure == nil, listedUntil < range.end else { return }
    let end = listedUntil.advanced(by: window, notAfter: range.end)
    let slice = MediaRange(start: listedUntil, end: end)
    let completion = context.makeCompletion { [unowned self] (result: Result<RecordingIndex, MediaError>) in
      listing = nil
      switch result {
      case .failure(let error):
        listingFailure = error
        context.wake()
      case .success(let index): listed(index.segments, through: slice.end, context: context)
      }
    }
    listing = service.listSegments(in: slice, token: token) { completion($0) }
  }

  private func listed(_ segments: [RecordingIndex.Segment], through end: MediaTime, context: NodeContext<FetchedObject>)
  {
    let sorted = segments.sorted { $0.startMs < $1.startMs }
    if !lookedBack, let first = sorted.first(where: { $0.range.overlaps(range) }), first.range.start <= range.start,
      first.startMs > MediaTime.validMilliseconds.lowerBound
    {
      // Look for the object that ends where the first one starts before planning anything.
      lookedBack = true
      let before = MediaRange(startMilliseconds: first.startMs - 1, endMilliseconds: first.startMs)
      let completion = context.makeCompletion { [unowned self] (result: Result<RecordingIndex, MediaError>) in
        listing = nil
        switch result {
        case .failure(let error):
          listingFailure = error
          context.wake()
        case .success(let index):
          if let previous = index.segments.first(where: { $0.endMs == first.startMs && $0.id != first.id }),
            objectFilter?(previous) ?? true
          {
            seen.insert(previous.id)
            plan.append(.object(previous))
          }
          listed(sorted, through: end, context: context)
        }
      }
      listing = service.listSegments(in: before, token: token) { completion($0) }
      return
    }
    lookedBack = true
    for segment in sorted
    where segment.range.overlaps(range) && !seen.contains(segment.id) && objectFilter?(segment) ?? true {
      seen.insert(segment.id)
      if segment.range.start > covered { plan.append(.hole(MediaRange(start: covered, end: segment.range.start))) }
      plan.append(.object(segment))
      covered = max(covered, segment.range.end)
    }
    if covered < end {
      plan.append(.hole(MediaRange(start: covered, end: end)))
      covered = end
    }
    listedUntil = end
    context.wake()
  }

  // MARK: Fetching

  private func requestAhead(context: NodeContext<FetchedObject>) {
    while nextToRequest < plan.count {
      guard case .object(let segment) = plan[nextToRequest] else {
        nextToRequest += 1
        continue
      }
      // Always allow one fetch, so an object larger than the budget still gets through.
      let size = segment.prefetchSize
      let budget = control.withLock { $0.readsAhead } ? prefetchBytes : 0
      guard bytesInFlight == 0 || bytesInFlight + size <= budget, transfers.count < maximumTransfers else {
        return
      }
      bytesInFlight += size
      fetch(segment, at: nextToRequest, context: context)
      nextToRequest += 1
    }
    // Everything planned is on its way: list the next window (at most one ahead of the fetches).
    listNextWindow(context: context)
  }

  private func fetch(_ segment: RecordingIndex.Segment, at position: Int, context: NodeContext<FetchedObject>) {
    let completion = context.makeCompletion { [unowned self] (fetch: ObjectFetch) in
      guard givenUp.remove(position) == nil else { return }
      transfers[position] = nil
      switch fetch {
      case .fetched(let data, let verified):
        stalledSinceArrival = false
        arrived[position] = FetchedObject(segment: segment, result: .success(data), digestVerified: verified)
      case .urlRefused(let error):
        if relisted.contains(position) {
          arrived[position] = FetchedObject(segment: segment, result: .failure(error))
        } else {
          relist(segment, at: position, context: context)
          return
        }
      case .failed(let error):
        guard error.gapReason != nil else {
          guard error.kind != .cancelled else { return }
          transferFailures[position] = error
          context.wake()
          return
        }
        arrived[position] = FetchedObject(segment: segment, result: .failure(error))
      }
      // A transfer ended: the next one starts now, whether or not downstream has room for this one.
      requestAhead(context: context)
      context.wake()
    }
    transfers[position] = service.fetchObject(segment) { completion($0) }
  }

  /// Lists the object's own span again for a fresh URL, then fetches it once more.
  private func relist(_ segment: RecordingIndex.Segment, at position: Int, context: NodeContext<FetchedObject>) {
    relisted.insert(position)
    let completion = context.makeCompletion { [unowned self] (result: Result<RecordingIndex, MediaError>) in
      guard givenUp.remove(position) == nil else { return }
      transfers[position] = nil
      switch result {
      case .failure(let error):
        transferFailures[position] = error
        context.wake()
      case .success(let index):
        guard let fresh = index.segments.first(where: { $0.id == segment.id }) else {
          arrived[position] = FetchedObject(
            segment: segment,
            result: .failure(MediaError.gap(.notFound, "\(segment.id.prefix(64)) is no longer listed")))
          context.wake()
          return
        }
        fetch(fresh, at: position, context: context)
      }
    }
    transfers[position] = service.listSegments(in: segment.range, token: token) { completion($0) }
  }

  private func cancelAll() {
    listing?.cancel()
    listing = nil
    for request in transfers.values { request.cancel() }
    transfers.removeAll()
  }

  /// Cancels what is in flight and starts again from the beginning of the range, or from a seek's target.
  public func flush(context: NodeContext<FetchedObject>) {
    cancelAll()
    arm(context)
    range = context.seekTarget.map { requested.starting(at: $0) } ?? requested
    plan.removeAll()
    seen.removeAll()
    relisted.removeAll()
    arrived.removeAll()
    listingFailure = nil
    stall = nil
    stalledSinceArrival = false
    givenUp.removeAll()
    transferFailures.removeAll()
    covered = range.start
    listedUntil = range.start
    lookedBack = false
    nextToRequest = 0
    nextToEmit = 0
    bytesInFlight = 0
    listNextWindow(context: context)
  }

  /// Cancels every listing and transfer in flight.
  public func stop(context: NodeContext<FetchedObject>) {
    cancelAll()
    disarm()
  }
}
