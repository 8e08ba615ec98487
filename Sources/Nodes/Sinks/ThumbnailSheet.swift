import Foundation
import PipelineGraph

/// Scrub previews of a range: a sprite of small pictures, one per `interval` of the range, and a WebVTT
/// index saying which rectangle of the sprite shows which stretch of time — what a web player's timeline
/// shows on hover (the `#xywh=` media fragments of WebVTT thumbnail tracks).
///
/// Feed it the keyframes of the range (a `FrameDecoder` with `keyframesOnly`: a day of recordings decodes
/// in seconds). Cue `k` covers `[start + k·interval, start + (k+1)·interval)`; its tile is the first
/// picture it is given inside it (pictures may come in several passes, each in time order), fitted inside `tileWidth` × the pictures' height for that width (black bars, never
/// stretched). A cue with no picture (a gap, a keyframe interval longer than the cue) has no tile and no
/// entry in the index. Tiles are laid out in rows of ``columns``, cue by cue; the sprite is made when the
/// first picture comes and written by ``sprite()`` and ``index(spriteName:)``.
///
/// Confined to its pipeline's executor; read the results after the graph ended.
public final class ThumbnailSheet: Node {
  /// Decoded keyframes.
  public typealias Input = DecodedFrame
  /// A sink.
  public typealias Output = Never

  /// The node's name.
  public let name: String
  /// The stretch of time the previews cover.
  public let range: MediaRange
  /// The time one tile stands for.
  public let interval: MediaDuration
  /// The width of a tile.
  public let tileWidth: Int
  /// Tiles in a row of the sprite.
  public let columns: Int
  /// The number of cues in the range.
  public let cueCount: Int
  /// The most cues a sheet makes (the sprite stays a JPEG a browser opens: under 65,535 rows).
  public static let maximumCues = 7_000

  /// The height of a tile (from the first picture's aspect), once a picture came.
  public private(set) var tileHeight: Int?
  /// The cues that have a tile, in order.
  public private(set) var filled: [Int] = []
  private var canvas: FrameBuffer?
  private var fitter: PictureFitter?

  /// Previews of `range`, one per `interval`, `tileWidth` wide (even, 16…1920), `columns` in a row.
  /// - Throws: ``MediaError`` `invalidArgument` for an empty range, an interval under 1 ms or a bad size;
  ///   `limitExceeded` for more than ``maximumCues`` cues.
  public init(
    name: String = "ThumbnailSheet", range: MediaRange, interval: MediaDuration, tileWidth: Int = 160,
    columns: Int = 10
  ) throws {
    guard !range.isEmpty, interval >= .microseconds(1_000) else {
      throw MediaError(.invalidArgument, "thumbnails need a range and an interval of at least 1 ms")
    }
    guard (16...1_920).contains(tileWidth), tileWidth % 2 == 0, (1...100).contains(columns) else {
      throw MediaError(.invalidArgument, "a tile is 16…1920 pixels wide (even), 1…100 in a row")
    }
    let length = range.duration.microseconds
    let (count, rest) = length.quotientAndRemainder(dividingBy: interval.microseconds)
    guard count + (rest > 0 ? 1 : 0) <= Self.maximumCues else {
      throw MediaError(
        .limitExceeded, "\(count) thumbnails: at most \(Self.maximumCues) (a longer --every makes fewer)")
    }
    let cues = Int(count) + (rest > 0 ? 1 : 0)
    guard min(cues, columns) * tileWidth <= 65_000 else {
      throw MediaError(.limitExceeded, "a sprite \(min(cues, columns) * tileWidth) pixels wide is too wide for a JPEG")
    }
    self.name = name
    self.range = range
    self.interval = interval
    self.tileWidth = tileWidth
    self.columns = columns
    cueCount = cues
  }

  /// Draws a picture into its cue's tile when it is the cue's first.
  public func process(_ input: DecodedFrame, context: NodeContext<Never>) throws {
    guard input.frame.width > 0, input.time >= range.start, input.time < range.end else { return }
    let cue = Int((try input.time - range.start).microseconds / interval.microseconds)
    // Pictures come in time order within one pass of a graph; a later pass brings cues an earlier one
    // left empty.
    let slot = filled.last.map { $0 < cue } ?? true ? filled.count : Self.insertionIndex(of: cue, in: filled)
    guard cue < cueCount, slot == filled.count || filled[slot] != cue else { return }
    if canvas == nil { try makeCanvas(for: input.frame) }
    guard let canvas, let fitter, let tileHeight else { return }
    try fitter.draw(input.frame, into: canvas, x: cue % columns * tileWidth, y: cue / columns * tileHeight)
    filled.insert(cue, at: slot)
  }

  /// The cues without a tile so far, in order.
  public var missingCues: [Int] {
    var missing: [Int] = []
    var index = 0
    for cue in 0..<cueCount {
      if index < filled.count && filled[index] == cue { index += 1 } else { missing.append(cue) }
    }
    return missing
  }

  /// Where `cue` goes in the sorted `cues`.
  private static func insertionIndex(of cue: Int, in cues: [Int]) -> Int {
    var (low, high) = (0, cues.count)
    while low < high {
      let middle = (low + high) / 2
      if cues[middle] < cue { low = middle + 1 } else { high = middle }
    }
    return low
  }

  private func makeCanvas(for picture: FrameBuffer) throws {
    let source = picture.pointer.pointee
    let aspect =
      Double(source.width) * Double(max(1, source.sample_aspect_ratio.num))
      / (Double(source.height) * Double(max(1, source.sample_aspect_ratio.den)))
    let height = max(2, Int((Double(tileWidth) / max(aspect, 0.01)).rounded()) & ~1)
    let tileHeight = min(height, 4 * tileWidth)
    let rows = (cueCount + columns - 1) / columns
    // A JPEG is at most 65,535 high, and the canvas stays under 200 megapixels (300 MB of 4:2:0).
    guard rows * tileHeight <= 65_000, rows * tileHeight * min(cueCount, columns) * tileWidth <= 200_000_000 else {
      throw MediaError(.limitExceeded, "a sprite of \(rows) rows of \(tileHeight) pixels is too tall for a JPEG")
    }
    self.tileHeight = tileHeight
    fitter = try PictureFitter(width: tileWidth, height: tileHeight)
    canvas = try PictureFitter.blackCanvas(width: min(cueCount, columns) * tileWidth, height: rows * tileHeight)
  }

  /// The sprite as a JPEG; nil when no picture came.
  public func sprite() throws -> Data? {
    guard let canvas else { return nil }
    return try JPEGEncoder().encode(canvas)
  }

  /// The WebVTT index: for each cue with a tile, its time from the range's start and its rectangle of
  /// the sprite named `spriteName` (`sprite.jpg#xywh=x,y,w,h`).
  public func index(spriteName: String) -> String {
    var text = "WEBVTT\n"
    guard let tileHeight else { return text }
    for cue in filled {
      let from = Int64(cue) * interval.microseconds
      let to = min(from + interval.microseconds, range.duration.microseconds)
      let (x, y) = (cue % columns * tileWidth, cue / columns * tileHeight)
      text +=
        "\n\(Self.timestamp(from)) --> \(Self.timestamp(to))\n\(spriteName)#xywh=\(x),\(y),\(tileWidth),\(tileHeight)\n"
    }
    return text
  }

  /// `hh:mm:ss.mmm` (hours past 99 as they are).
  static func timestamp(_ microseconds: Int64) -> String {
    let milliseconds = microseconds / 1_000
    let (hours, minutes) = (milliseconds / 3_600_000, milliseconds / 60_000 % 60)
    let (seconds, rest) = (milliseconds / 1_000 % 60, milliseconds % 1_000)
    return String(format: "%02lld:%02lld:%02lld.%03lld", hours, minutes, seconds, rest)
  }
}
