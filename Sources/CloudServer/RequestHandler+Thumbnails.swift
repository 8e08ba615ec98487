internal import CMicroHTTPD
import Foundation
import Nodes
import PipelineGraph
import Synchronization

/// `GET /thumbnails?start_ms=S&end_ms=E&channel=N&every_ms=I[&width=W][&columns=C]` (bearer token of the
/// served device): the WebVTT index of a range's scrub previews (``ThumbnailGraph``), whose cues name
/// rectangles of `thumbnails.jpg?…` — the sprite, at a presigned URL (`expires`, `sig`, as objects are),
/// so that an `<img>` or a player's thumbnail track can load it without the token. `GET /thumbnails.jpg`
/// answers the sprite to a presigned URL or a bearer token.
///
/// A sheet decodes one keyframe a cue (an hour at one a minute: about a second of a core): one is made
/// at a time (another request meanwhile: 429 `rate_limited`), and the last few are kept, so the index
/// and its sprite cost one run.
extension RequestHandler {
  /// What a preview request asks for, in the one spelling its signature covers.
  struct PreviewQuery: Hashable {
    var start: Int64
    var end: Int64
    var channel: UInt8
    var every: Int64
    var width: Int
    var columns: Int

    /// `start_ms=…&end_ms=…&channel=…&every_ms=…&width=…&columns=…`.
    var canonical: String {
      "start_ms=\(start)&end_ms=\(end)&channel=\(channel)&every_ms=\(every)&width=\(width)&columns=\(columns)"
    }
  }

  func thumbnails(_ connection: OpaquePointer, sprite: Bool) -> Answer {
    let query: PreviewQuery
    switch previewQuery(connection) {
    case .success(let parsed): query = parsed
    case .failure(let refusal): return refusal.answer
    }
    if sprite, let presigned = presignature(connection, signing: { previewSignature(query, $0) }) {
      if case .failure(let refusal) = presigned { return refusal.answer }
    } else if case .failure(let refusal) = authorize(connection) {
      return .error(refusal.status, refusal.error, refusal.message)
    }
    let sheet: PreviewSheet
    switch previews.value(for: query, making: { () throws(NotServed) in try makeSheet(query) }) {
    case .success(let made): sheet = made
    case .failure(let refusal): return refusal.answer
    }
    if sprite { return .body(200, "image/jpeg", sheet.sprite) }
    let expires = configuration.now() &+ configuration.urlLifetimeSeconds
    let name = "thumbnails.jpg?\(query.canonical)&expires=\(expires)&sig=\(previewSignature(query, expires))"
    return .body(200, "text/vtt; charset=utf-8", Data(sheet.index(name).utf8))
  }

  private func previewSignature(_ query: PreviewQuery, _ expires: Int64) -> String {
    HMACSHA256.hex("thumbnails?\(query.canonical).\(expires)", key: configuration.secret)
  }

  private func previewQuery(_ connection: OpaquePointer) -> Result<PreviewQuery, NotServed> {
    func integer(_ key: String, default fallback: Int64? = nil) -> Int64? {
      guard let text = value(connection, .GET_ARGUMENT_KIND, key) else { return fallback }
      return Int64(text)
    }
    func invalid(_ message: String) -> Result<PreviewQuery, NotServed> {
      .failure(NotServed(answer: .error(400, "invalid_argument", message)))
    }
    guard let start = integer("start_ms"), let end = integer("end_ms"), let every = integer("every_ms"),
      let channel = integer("channel"), let width = integer("width", default: 160),
      let columns = integer("columns", default: 10)
    else { return invalid("start_ms, end_ms, channel and every_ms must be integers (width, columns too)") }
    guard Self.isRange(start, end) else {
      return invalid("start_ms < end_ms, valid times, and a span of at most 10 days are required")
    }
    guard (0...255).contains(channel) else { return invalid("channel is 0…255") }
    guard every >= 100, every <= end - start else { return invalid("every_ms is 100 ms up to the span") }
    guard (16...1_920).contains(width), width % 2 == 0 else { return invalid("width is even, 16…1920") }
    guard (1...100).contains(columns) else { return invalid("columns is 1…100") }
    return .success(
      PreviewQuery(
        start: start, end: end, channel: UInt8(channel), every: every, width: Int(width), columns: Int(columns)))
  }

  /// Runs the preview graph over the library, reading only the objects the server would serve.
  private func makeSheet(_ query: PreviewQuery) throws(NotServed) -> PreviewSheet {
    do {
      let sheet = try ThumbnailSheet(
        range: MediaRange(startMilliseconds: query.start, endMilliseconds: query.end),
        interval: try .milliseconds(query.every), tileWidth: query.width, columns: query.columns)
      try ThumbnailGraph.fill(
        sheet, from: library, token: "served", channel: query.channel,
        accepting: { [self] in serves($0) })
      guard let sprite = try sheet.sprite() else {
        throw NotServed(answer: .error(404, "not_found", "no keyframe of video channel \(query.channel) in the range"))
      }
      return PreviewSheet(sprite: sprite, template: sheet.index(spriteName: PreviewSheet.placeholder))
    } catch let refusal as NotServed {
      throw refusal
    } catch let error as MediaError where error.kind == .limitExceeded || error.kind == .invalidArgument {
      throw NotServed(answer: .error(400, "invalid_argument", error.message))
    } catch {
      configuration.log?("thumbnails \(query.canonical) failed: \(String(describing: error).oneLine)")
      throw NotServed(answer: .error(500, "internal", "the previews could not be made"))
    }
  }
}

/// A preview sheet made: its sprite, and its index for a sprite URL (the sheet and its canvas are not
/// kept).
struct PreviewSheet: Sendable {
  let sprite: Data
  /// The index with ``placeholder`` where the sprite's URL goes.
  let template: String
  static let placeholder = "\u{1}sprite\u{1}"

  /// The WebVTT index naming `spriteURL`.
  func index(_ spriteURL: String) -> String { template.replacingOccurrences(of: Self.placeholder, with: spriteURL) }
}
