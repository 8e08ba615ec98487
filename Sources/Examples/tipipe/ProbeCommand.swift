import Foundation
import Nodes
import PipelineGraph

/// `tipipe probe` (`spec/cli.md`): what a media file holds — start, duration, tracks, keyframes.
enum ProbeCommand {
  static let summary = "describe a media file: duration, tracks, B-frames, keyframes"
  static let usage = """
    usage: tipipe probe FILE [--json]

    Reads FILE (MP4, MOV, MKV, MPEG-TS, raw H.264/H.265/AAC…) and prints its start and duration, its
    audio and video tracks (codec, size and frame rate, the turn its container asks for, B-frames;
    sample rate and channels) and the times of its video keyframes, in seconds from the file's start —
    the times `tipipe export --input` takes. --json prints spec/cli.md's object, plus, for a picture the
    container asks to show otherwise than stored, "rotation" (the clockwise angle ffmpeg reads from the
    display matrix: 90, 180, 270, or 0 for one flipped top to bottom) and "mirrored": true when it is
    shown mirrored. An unreadable file is exit 1 with the error line.
    """

  struct Output: Encodable {
    struct Track: Encodable {
      var index: Int
      var kind: String
      var codec: String
      var width: Int?
      var height: Int?
      var fps: Double?
      /// The clockwise angle ffmpeg reads from the display matrix; omitted when shown as stored.
      var rotation: Int?
      /// True when the picture is shown mirrored; omitted otherwise.
      var mirrored: Bool?
      var bFrames: Bool?
      var sampleRate: Int?
      var channels: Int?
      var frames: Int?
      var startS: Double?
      var durationS: Double?
      var read: Bool

      enum CodingKeys: String, CodingKey {
        case index, kind, codec, width, height, fps, rotation, mirrored
        case bFrames = "b_frames"
        case sampleRate = "sample_rate"
        case channels, frames
        case startS = "start_s"
        case durationS = "duration_s"
        case read
      }
    }
    var durationS: Double
    var startS: Double
    var container: String
    var tracks: [Track]
    var keyframesS: [Double]

    enum CodingKeys: String, CodingKey {
      case durationS = "duration_s"
      case startS = "start_s"
      case container, tracks
      case keyframesS = "keyframes_s"
    }
  }

  static func run(_ arguments: [String]) throws -> Int32 {
    let files = arguments.filter { !$0.hasPrefix("-") }
    let flags = try FlagParser(arguments.filter { $0.hasPrefix("-") }, known: ["--json": .boolean])
    guard files.count == 1, let path = files.first else {
      throw UsageError(message: files.isEmpty ? "probe needs a FILE" : "probe takes one FILE")
    }
    let info = try MediaFileSource.probe(path: path)
    let output = describe(info)
    if flags.has("--json") {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
      if let error = StandardOutput.write(try encoder.encode(output) + Data("\n".utf8)) { throw error }
      return 0
    }
    var text = "\(path): \(info.container), \(String(format: "%.3f", output.durationS)) s"
    text += " from \(String(format: "%.3f", output.startS)) s\n"
    for track in output.tracks {
      text += "  #\(track.index) \(track.kind) \(track.codec)"
      if track.kind == "video" {
        text += " \(track.width ?? 0)x\(track.height ?? 0)"
        if let fps = track.fps { text += String(format: " %.3f fps", fps) }
        if let turn = info.tracks.first(where: { $0.index == track.index })?.turn { text += ", shown \(turn)" }
        if track.bFrames == true { text += ", B-frames" }
      } else {
        text += " \(track.sampleRate ?? 0) Hz, \(track.channels ?? 0) channel(s)"
      }
      if let frames = track.frames { text += ", \(frames) frames" }
      if !track.read { text += " (not read)" }
      text += "\n"
    }
    let keys = output.keyframesS.prefix(20).map { String(format: "%.3f", $0) }.joined(separator: " ")
    text += "  keyframes (\(output.keyframesS.count)): \(keys)\(output.keyframesS.count > 20 ? " …" : "")\n"
    if let error = StandardOutput.write(Data(text.utf8)) { throw error }
    return 0
  }

  /// Seconds from the file's start.
  static func seconds(_ time: MediaTime, from start: MediaTime) -> Double {
    let (difference, overflow) = time.microseconds.subtractingReportingOverflow(start.microseconds)
    return overflow ? Double(time.microseconds) / 1e6 - Double(start.microseconds) / 1e6 : Double(difference) / 1e6
  }

  static func describe(_ info: MediaFileInfo) -> Output {
    let start = info.start
    return Output(
      durationS: Double(info.duration.microseconds) / 1e6, startS: Double(start.microseconds) / 1e6,
      container: info.container,
      tracks: info.tracks.map { track in
        let read = track.codec != nil
        let video = track.kind == .video
        return Output.Track(
          index: track.index, kind: video ? "video" : "audio", codec: track.codec?.description ?? track.codecName,
          width: video ? track.width : nil, height: video ? track.height : nil,
          fps: video ? track.framesPerSecond : nil, rotation: track.turn?.degrees,
          mirrored: track.turn?.mirrors == true ? true : nil,
          bFrames: video && read ? track.hasBFrames : nil, sampleRate: video ? nil : track.sampleRate,
          channels: video ? nil : track.channels, frames: read ? track.packets : nil,
          startS: read ? seconds(track.range.start, from: start) : nil,
          durationS: read ? Double(track.range.duration.microseconds) / 1e6 : nil, read: read)
      },
      keyframesS: info.keyframes.map { seconds($0, from: start) })
  }
}
