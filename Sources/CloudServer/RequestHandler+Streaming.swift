internal import CMicroHTTPD
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// HLS of a range, fMP4 segments made on the fly by stream copy (``StreamSegmentGraph``; issue 26):
///
/// - `GET /hls/index.m3u8?start_ms=S&end_ms=E&channel=N[&audio_channel=M]`, with the device's bearer
///   token or a presigned URL (`expires`, `sig`): a VOD media playlist, one segment per recorded object
///   of the range. Each run of contiguous objects starts with its `EXT-X-MAP` (with `&maps=each`, every
///   segment names its own: a picture size or an audio rate may change between two objects of a run) and
///   its `EXT-X-PROGRAM-DATE-TIME`; a gap between runs is an `EXT-X-DISCONTINUITY`. Segment times are those
///   of the stream: from the range's start, each gap closed up (as an export closes them), so that the
///   playlist's durations are the media's and a player seeks where it means to; each run's
///   `EXT-X-PROGRAM-DATE-TIME` gives the wall clock back. An
///   answer to a bearer token names its own presigned URL in `X-Presigned-URL` (for a player that cannot
///   send the token: VLC, ffplay, Safari).
/// - `GET /hls/init.mp4?…&n=K` and `GET /hls/segment.m4s?…&n=K` (presigned in the playlist): the
///   initialization section and the media of object K of the served index, clipped to the range.
///
/// Encrypted objects are decrypted here; only objects the server would serve are read. Two segments
/// are made at a time at most (a third request meanwhile, or one for a segment being made: 503
/// `unavailable`, to retry); the last eight are kept (64 MB at most). A presigned playlist signs its segments no longer than itself.
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
    let number = value(connection, .GET_ARGUMENT_KIND, "n")
    if resource != "index.m3u8" { signed += "&n=\(number ?? "")" }
    // Authenticated before anything about the index is said (a 404 for an unknown object would count
    // the library's entries for anyone).
    var expiry: Int64?
    if let presigned = presignature(connection, signing: { streamSignature(resource, signed, $0) }) {
      switch presigned {
      case .success(let expires): expiry = expires
      case .failure(let refusal): return refusal.answer
      }
    } else if case .failure(let refusal) = authorize(connection) {
      return .error(refusal.status, refusal.error, refusal.message)
    }
    var object: Int?
    if resource != "index.m3u8" {
      guard let number = number.flatMap({ Int($0) }), index.segments.indices.contains(number) else {
        return .error(404, "not_found", "no such segment")
      }
      object = number
    }
    // A presigned playlist signs its segments no longer than itself.
    guard let object else {
      return playlist(
        query, presignedUntil: expiry, mapEachSegment: value(connection, .GET_ARGUMENT_KIND, "maps") == "each")
    }
    switch segments.value(
      for: SegmentKey(query: query, object: object),
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

  /// `query` with `expires` (the URL lifetime from now, or `until` when sooner) and its signature, for
  /// `resource`.
  private func presigned(_ resource: String, _ query: String, until: Int64? = nil) -> String {
    let expires = min(configuration.now() &+ configuration.urlLifetimeSeconds, until ?? .max)
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
    guard Self.isRange(start, end) else {
      return invalid("start_ms < end_ms, valid times, and a span of at most 10 days are required")
    }
    return .success(StreamQuery(start: start, end: end, channel: channel, audioChannel: audio))
  }

  /// One object's place in a stream: what of it is played (overlaps with the object before it left
  /// out) and where that starts on the stream's timeline (ms from the range's start, gaps closed up).
  struct Placed {
    let number: Int
    let stretch: (start: Int64, end: Int64)
    let position: Int64
  }

  /// The served objects of `query`'s range that carry its video channel (or do not say), in runs of contiguous ones
  /// with the same tracks (a change of tracks is a discontinuity): an object listed twice, or
  /// overlapping the one before it, plays once.
  func layout(_ query: StreamQuery) -> [[Placed]] {
    var runs: [[Placed]] = []
    var lastEnd: Int64?
    var lastTracks: [RecordingIndex.Segment.Track] = []
    var seen = Set<String>()
    var position: Int64 = 0
    for (number, segment) in index.segments.enumerated()
    where segment.startMs < query.end && segment.endMs > query.start {
      let tracks = segment.tracks.filter {
        $0.kind == "video" && $0.channelId == Int(query.channel)
          || $0.kind == "audio" && query.audioChannel.map(Int.init) == $0.channelId
      }
      // An index that does not list an object's tracks (they are optional to a reader) plays it.
      guard segment.tracks.isEmpty || tracks.contains(where: { $0.kind == "video" }), !seen.contains(segment.id),
        case .success = servablePath(segment.id)
      else { continue }
      let start = max(segment.startMs, query.start, lastEnd ?? .min)
      let end = min(segment.endMs, query.end)
      guard start < end else { continue }
      seen.insert(segment.id)
      let placed = Placed(number: number, stretch: (start, end), position: position)
      if let lastEnd, segment.startMs <= lastEnd, tracks == lastTracks, !runs.isEmpty {
        runs[runs.count - 1].append(placed)
      } else {
        runs.append([placed])
      }
      position += end - start
      lastEnd = end
      lastTracks = tracks
    }
    return runs
  }

  /// The media playlist of `query`'s range; with `mapEachSegment`, every segment names its own
  /// initialization section, else each run names its first object's.
  private func playlist(_ query: StreamQuery, presignedUntil expiry: Int64?, mapEachSegment: Bool) -> Answer {
    let runs = layout(query)
    guard !runs.isEmpty else { return .error(404, "not_found", "nothing of the channel was recorded in the range") }
    func seconds(_ placed: Placed) -> Double { Double(placed.stretch.end - placed.stretch.start) / 1000 }
    let longest = runs.joined().map(seconds).max() ?? 1
    var text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:\(Int(longest.rounded(.up)))\n"
    text += "#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MEDIA-SEQUENCE:0\n"
    let dates = ISO8601DateFormatter()
    dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    for (position, run) in runs.enumerated() {
      if position > 0 { text += "#EXT-X-DISCONTINUITY\n" }
      let date = Date(timeIntervalSince1970: Double(run[0].stretch.start) / 1000)
      text += "#EXT-X-PROGRAM-DATE-TIME:\(dates.string(from: date))\n"
      for (index, placed) in run.enumerated() {
        // A player takes a new section as a new stream (Media Source Extensions, hls.js: decoding waits
        // for a keyframe), which a segment that continues a GOP begun in the object before it does not
        // start with: a run names one. The listing does not say a picture size or an audio rate, so a
        // camera that changes them between two objects of a run plays on in the section's parameters
        // (decoders take the in-band parameter sets: ffmpeg, Chromium); `maps=each` (the page, which
        // appends a section only when its bytes differ) names each segment's own.
        if index == 0 || mapEachSegment {
          text +=
            "#EXT-X-MAP:URI=\"\(presigned("init.mp4", "\(query.canonical)&n=\(placed.number)", until: expiry))\"\n"
        }
        text += String(format: "#EXTINF:%.3f,\n", seconds(placed))
        text += presigned("segment.m4s", "\(query.canonical)&n=\(placed.number)", until: expiry) + "\n"
      }
    }
    text += "#EXT-X-ENDLIST\n"
    let headers = expiry == nil ? ["X-Presigned-URL": presigned("index.m3u8", query.canonical)] : [:]
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
    let placed = run[place]
    let stretch = MediaRange(startMilliseconds: placed.stretch.start, endMilliseconds: placed.stretch.end)
    var reading = stretch
    if place > 0 {
      reading = MediaRange(
        startMilliseconds: index.segments[run[place - 1].number].startMs, endMilliseconds: stretch.end.milliseconds)
    }
    do {
      // The timeline's 0 as a recording time for this run: its gaps before are closed up.
      let origin = MediaTime(milliseconds: stretch.start.milliseconds - placed.position)
      return try StreamSegmentGraph.make(
        from: library, token: "served", stretch: stretch, reading: reading,
        origin: origin, videoChannel: query.channel, audioChannel: query.audioChannel,
        accepting: { [self] in serves($0) })
    } catch let error as MediaError where error.kind == .noMedia {
      throw NotServed(answer: .error(404, "not_found", error.message))
    } catch {
      configuration.log?("hls segment \(number) failed: \(String(describing: error).oneLine)")
      throw NotServed(answer: .error(500, "internal", "the segment could not be made"))
    }
  }
}

/// A stream segment: one object for one query.
struct SegmentKey: Hashable, Sendable {
  let query: RequestHandler.StreamQuery
  let object: Int
}
