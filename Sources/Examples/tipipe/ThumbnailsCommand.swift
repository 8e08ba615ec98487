import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe thumbnails` (`spec/cli.md`): scrub previews of a range — a sprite of keyframe thumbnails and
/// a WebVTT index — through `ThumbnailGraph`.
enum ThumbnailsCommand {
  static let summary = "a sprite of keyframe thumbnails and its WebVTT index, for a player's timeline"
  static let usage = """
    usage: tipipe thumbnails --endpoint E [--token K] --start T --end T --video-channel N --every SECONDS
                             --out DIR [--width 160] [--columns 10]

    Decodes the keyframes of [start, end) of the recordings at E and writes DIR/thumbnails.jpg (one tile
    per SECONDS of the range, --width pixels wide, the height from the pictures' aspect, --columns tiles
    a row, cue by cue: a cue with no keyframe in it — a gap — stays black) and DIR/thumbnails.vtt (WebVTT:
    each cue with a picture, its time from the range's start and its tile as thumbnails.jpg#xywh=x,y,w,h;
    a gap's cue is not in it, so a player shows nothing there). Prints {"sprite":…,"index":…,
    "thumbnails":N,"cues":M,"tile":{"width":…,"height":…},"columns":…}: N tiles with a picture (the
    index's cues), M tiles in the sprite (M − N black).
    At most 7000 cues; DIR is made if missing, and only regular files in it are replaced.
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--video-channel": .value,
        "--every": .value, "--out": .value, "--width": .value, "--columns": .value,
      ])
    let endpoint = try Endpoint(flags)
    guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
    guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
    guard start < end else { throw UsageError(message: "--start must be before --end") }
    guard flags.string("--video-channel") != nil else { throw UsageError(message: "--video-channel is required") }
    let channel = UInt8(try flags.integer("--video-channel", default: 0, range: 0...255))
    let every = try FileExportCommand.offset("--every", try flags.required("--every"), meaning: "a period in seconds")
    guard every >= .microseconds(100_000) else { throw UsageError(message: "--every must be at least 0.1 s") }
    let width = try flags.integer("--width", default: 160, range: 16...1_920)
    guard width % 2 == 0 else { throw UsageError(message: "--width must be even") }
    let columns = try flags.integer("--columns", default: 10, range: 1...100)
    let out = try flags.required("--out")
    guard !out.isEmpty else { throw UsageError(message: "--out must not be empty") }
    let directory = URL(fileURLWithPath: out, isDirectory: true)
    let range = MediaRange(startMilliseconds: start, endMilliseconds: end)
    let sheet: ThumbnailSheet
    do {
      sheet = try ThumbnailSheet(range: range, interval: every, tileWidth: width, columns: columns)
    } catch let error as MediaError where error.kind == .limitExceeded {
      throw UsageError(message: error.message)
    }
    let spriteURL = directory.appendingPathComponent("thumbnails.jpg")
    let indexURL = directory.appendingPathComponent("thumbnails.vtt")
    // The outputs are checked before any work (spec/cli.md: a directory in the way is a usage error).
    for url in [spriteURL, indexURL] {
      do { try OutputFile.validate(url) } catch let error as MediaError { throw UsageError(message: error.message) }
    }
    try ThumbnailGraph.fill(sheet, from: endpoint.service, token: endpoint.token, channel: channel)
    guard let sprite = try sheet.sprite(), let height = sheet.tileHeight else {
      throw TiError(.noRecordableMedia, "no keyframe of video channel \(channel) in the range")
    }
    do {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    } catch {
      throw TiError(.fileWriteFailed, "cannot make \(directory.path): \(error.localizedDescription)")
    }
    try OutputFile.write(sprite, to: spriteURL)
    try OutputFile.write(Data(sheet.index(spriteName: spriteURL.lastPathComponent).utf8), to: indexURL)
    StandardOutput.line(
      "{\"sprite\":\(PlayCommand.jsonString(spriteURL.path)),\"index\":\(PlayCommand.jsonString(indexURL.path)),"
        + "\"thumbnails\":\(sheet.filled.count),\"cues\":\(sheet.cueCount),"
        + "\"tile\":{\"width\":\(width),\"height\":\(height)},\"columns\":\(columns)}")
    return 0
  }
}
