internal import CMicroHTTPD
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// HLS of a range, fMP4 segments made on the fly by stream copy (``StreamSegmentGraph``; issue 26):
///
/// - `GET /hls/index.m3u8?start_ms=S&end_ms=E&channel=N[&audio_channel=M]`, with the device's bearer
///   token or a presigned URL (`expires`, `sig`): a VOD media playlist, one segment per recorded object
///   of the range. Each run of contiguous objects starts with its `EXT-X-MAP` and its
///   `EXT-X-PROGRAM-DATE-TIME`; a gap between runs is an `EXT-X-DISCONTINUITY`. Segment times are those
///   of the stream: from the range's start, each gap closed up (as an export closes them), so that the
///   playlist's durations are the media's and a player seeks where it means to; each run's
///   `EXT-X-PROGRAM-DATE-TIME` gives the wall clock back. An
///   answer to a bearer token names its own presigned URL in `X-Presigned-URL` (for a player that cannot
///   send the token: VLC, ffplay, Safari).
/// - `GET /hls/init.mp4?…&n=K` and `GET /hls/segment.m4s?…&n=K` (presigned in the playlist): the
///   initialization section and the media of object K of the served index, clipped to the range.
///
/// Encrypted objects are decrypted here; only objects the server would serve are read. Two segments
/// are made at a time at most (a third request waits, up to 30 s, then 503); the last eight are kept.
extension RequestHandler {
  /// What a stream request names, in the one spelling its signature covers.
  struct StreamQuery: Hashable {
    var start: Int64
    var end: Int64
    var channel: UInt8
    var audioChannel: UInt8?

    /// `start_ms=…&end_ms=…&channel=…[&audio_channel=…]`.
    var canonical: String {
      "start_ms=\(start)&end_ms=\(end)&channel=\(channel)" + (audioChannel.map { "&audio_channel=\($0)" } ?? "")
    }
  }

  func stream(_ resource: String, _ connection: OpaquePointer) -> Answer {
    guard ["index.m3u8", "init.mp4", "segment.m4s"].contains(resource) else {
      return .error(404, "not_found", "no such resource")
    }
    let query: StreamQuery
    switch streamQuery(connection) {
    case .success(let parsed): query = parsed
    case .failure(let refusal): return refusal.answer
    }
    var signed = query.canonical
    var object: Int?
    if resource != "index.m3u8" {
      guard let text = value(connection, .GET_ARGUMENT_KIND, "n"), let number = Int(text),
        index.segments.indices.contains(number)
      else { return .error(404, "not_found", "no such segment") }
      object = number
      signed += "&n=\(number)"
    }
    var bearer = false
    if let expiresText = value(connection, .GET_ARGUMENT_KIND, "expires") {
      guard let expires = Int64(expiresText), let sig = value(connection, .GET_ARGUMENT_KIND, "sig"),
        HMACSHA256.matches(sig, streamSignature(resource, signed, expires))
      else { return .error(403, "signature_invalid", "the URL's signature is not valid") }
      guard expires >= configuration.now() else { return .error(403, "signature_expired", "the URL has expired") }
    } else if case .failure(let refusal) = authorize(connection) {
      return .error(refusal.status, refusal.error, refusal.message)
    } else {
      bearer = true
    }
    guard let object else { return playlist(query, bearer: bearer) }
    switch segments.segment(
      for: SegmentCache.Key(query: query, object: object),
      making: { () throws(NotServed) in
        try makeSegment(object, query)
      })
    {
    case .success(let made):
      return resource == "init.mp4"
        ? .body(200, "video/mp4", made.initialization) : .body(200, "video/iso.segment", made.media)
    case .failure(let refusal): return refusal.answer
    }
  }

  private func streamSignature(_ resource: String, _ query: String, _ expires: Int64) -> String {
    HMACSHA256.hex("hls/\(resource)?\(query)&expires=\(expires)", key: configuration.secret)
  }

  /// `query` with `expires` and its signature, for `resource`.
  private func presigned(_ resource: String, _ query: String) -> String {
    let expires = configuration.now() &+ configuration.urlLifetimeSeconds
    return "\(resource)?\(query)&expires=\(expires)&sig=\(streamSignature(resource, query, expires))"
  }

  private func streamQuery(_ connection: OpaquePointer) -> Result<StreamQuery, NotServed> {
    func invalid(_ message: String) -> Result<StreamQuery, NotServed> {
      .failure(NotServed(answer: .error(400, "invalid_argument", message)))
    }
    guard let start = value(connection, .GET_ARGUMENT_KIND, "start_ms").flatMap({ Int64($0) }),
      let end = value(connection, .GET_ARGUMENT_KIND, "end_ms").flatMap({ Int64($0) }),
      let channel = value(connection, .GET_ARGUMENT_KIND, "channel").flatMap({ UInt8($0) })
    else { return invalid("start_ms and end_ms must be integers, channel 0…255") }
    var audio: UInt8?
    if let text = value(connection, .GET_ARGUMENT_KIND, "audio_channel") {
      guard let number = UInt8(text) else { return invalid("audio_channel is 0…255") }
      audio = number
    }
    let span = end.subtractingReportingOverflow(start)
    guard start < end, !span.overflow, span.partialValue <= 864_000_000 else {
      return invalid("start_ms < end_ms and a span of at most 10 days are required")
    }
    return .success(StreamQuery(start: start, end: end, channel: channel, audioChannel: audio))
  }

  /// The served objects of `query`'s range in runs of contiguous ones, each object with where its
  /// stretch starts on the stream's timeline (in ms from the range's start, the gaps closed up).
  func layout(_ query: StreamQuery) -> [[(number: Int, position: Int64)]] {
    var runs: [[(number: Int, position: Int64)]] = []
    var lastEnd: Int64?
    var position: Int64 = 0
    for (number, segment) in index.segments.enumerated()
    where segment.startMs < query.end && segment.endMs > query.start {
      guard case .success = servablePath(segment.id) else { continue }
      if let lastEnd, segment.startMs <= lastEnd, !runs.isEmpty {
        runs[runs.count - 1].append((number, position))
      } else {
        runs.append([(number, position)])
      }
      position += min(segment.endMs, query.end) - max(segment.startMs, query.start)
      lastEnd = max(lastEnd ?? segment.endMs, segment.endMs)
    }
    return runs
  }

  /// The media playlist of `query`'s range.
  private func playlist(_ query: StreamQuery, bearer: Bool) -> Answer {
    let runs = layout(query)
    guard !runs.isEmpty else { return .error(404, "not_found", "nothing was recorded in the range") }
    func seconds(_ number: Int) -> Double {
      let segment = index.segments[number]
      return Double(min(segment.endMs, query.end) - max(segment.startMs, query.start)) / 1000
    }
    let longest = runs.joined().map { seconds($0.number) }.max() ?? 1
    var text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:\(Int(longest.rounded(.up)))\n"
    text += "#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MEDIA-SEQUENCE:0\n"
    let dates = ISO8601DateFormatter()
    dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    for (position, run) in runs.enumerated() {
      if position > 0 { text += "#EXT-X-DISCONTINUITY\n" }
      let first = index.segments[run[0].number]
      text += "#EXT-X-MAP:URI=\"\(presigned("init.mp4", "\(query.canonical)&n=\(run[0].number)"))\"\n"
      let date = Date(timeIntervalSince1970: Double(max(first.startMs, query.start)) / 1000)
      text += "#EXT-X-PROGRAM-DATE-TIME:\(dates.string(from: date))\n"
      for (number, _) in run {
        text += String(format: "#EXTINF:%.3f,\n", seconds(number))
        text += presigned("segment.m4s", "\(query.canonical)&n=\(number)") + "\n"
      }
    }
    text += "#EXT-X-ENDLIST\n"
    let headers = bearer ? ["X-Presigned-URL": presigned("index.m3u8", query.canonical)] : [:]
    return .body(200, "application/vnd.apple.mpegurl", Data(text.utf8), headers: headers)
  }

  /// Object `number` of the index clipped to the range, at its place on the stream's timeline; read with
  /// the object before it when it continues its run (its first pictures may belong to a GOP that began
  /// there).
  private func makeSegment(_ number: Int, _ query: StreamQuery) throws(NotServed) -> StreamSegment {
    let runs = layout(query)
    guard let run = runs.first(where: { $0.contains { $0.number == number } }),
      let place = run.firstIndex(where: { $0.number == number })
    else { throw NotServed(answer: .error(404, "not_found", "object \(number) is not served in the range")) }
    let segment = index.segments[number]
    let stretch = MediaRange(
      startMilliseconds: max(segment.startMs, query.start), endMilliseconds: min(segment.endMs, query.end))
    var reading = stretch
    if place > 0 {
      reading = MediaRange(
        startMilliseconds: index.segments[run[place - 1].number].startMs, endMilliseconds: stretch.end.milliseconds)
    }
    do {
      // The timeline's 0 as a recording time for this run: its gaps before are closed up.
      let origin = MediaTime(milliseconds: stretch.start.milliseconds - run[place].position)
      return try StreamSegmentGraph.make(
        from: LocalLibraryService(directory: configuration.root), token: "served", stretch: stretch, reading: reading,
        origin: origin, videoChannel: query.channel, audioChannel: query.audioChannel,
        accepting: { [self] in if case .success = servablePath($0.id) { true } else { false } })
    } catch let error as TiError where error.code == .noRecordableMedia {
      throw NotServed(answer: .error(404, "not_found", error.message))
    } catch {
      configuration.log?("hls segment \(number) failed: \(String(describing: error).oneLine)")
      throw NotServed(answer: .error(500, "internal", "the segment could not be made"))
    }
  }
}

/// The stream segments a server made lately, and a bound on how many are made at once. Thread-safe.
final class SegmentCache: Sendable {
  /// A segment of one object for one query.
  struct Key: Hashable, Sendable {
    let query: RequestHandler.StreamQuery
    let object: Int
  }

  /// Segments kept.
  static let capacity = 8
  private let kept = Locked<[(Key, StreamSegment)]>([])
  private let makers = DispatchSemaphore(value: 2)

  /// The kept segment of `key`, or the one `make` makes now (at most two at once: a third waits, up to
  /// 30 s, then is answered 503).
  func segment(
    for key: Key, making make: () throws(RequestHandler.NotServed) -> StreamSegment
  ) -> Result<StreamSegment, RequestHandler.NotServed> {
    if let segment = kept.withLock({ $0.first { $0.0 == key }?.1 }) { return .success(segment) }
    guard makers.wait(timeout: .now() + 30) == .success else {
      return .failure(RequestHandler.NotServed(answer: .error(503, "unavailable", "segments are being made; retry")))
    }
    defer { makers.signal() }
    if let segment = kept.withLock({ $0.first { $0.0 == key }?.1 }) { return .success(segment) }
    let made = Result { () throws(RequestHandler.NotServed) in try make() }
    if case .success(let segment) = made {
      kept.withLock { kept in
        kept.append((key, segment))
        if kept.count > Self.capacity { kept.removeFirst() }
      }
    }
    return made
  }
}
