import Foundation
import MediaSynthesis
import Nodes
import PipelineGraph

/// `tipipe synth`: writes a synthetic recording library (`spec/cli.md`).
enum SynthCommand {
  static let summary = "write a synthetic recording library (real H.264/H.265 + AAC/G.711)"
  static let usage = """
    usage: tipipe synth --out DIR [--start T] [--duration SECONDS] [--segment-seconds 60]
                        [--size 1280x720] [--fps 25] [--gop 50] [--video h264|h265]
                        [--audio aac|g711a|g711u|none] [--video-channel 0] [--audio-channel 1]
                        [--encrypt] [--gap START_OFFSET_S:LENGTH_S]... [--device-id ID] [--beacon]
                        [--quiet]

    Writes DIR/index.json and DIR/objects/*.tseg (spec/segment-format.md): a moving picture and a
    tone, encoded for real, object by object. T is UTC milliseconds or ISO-8601 with a zone.
    --beacon makes a sync test instead: each second opens with 100 ms of white picture and of a 1 kHz
    beep at the same media time (lip sync seen, heard and measured: tipipe play --window).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--out": .value, "--start": .value, "--duration": .value, "--segment-seconds": .value, "--size": .value,
        "--fps": .value, "--gop": .value, "--video": .value, "--audio": .value, "--video-channel": .value,
        "--audio-channel": .value, "--encrypt": .boolean, "--gap": .repeated, "--device-id": .value,
        "--beacon": .boolean, "--quiet": .boolean,
      ])
    var options = LibrarySynthesizer.Options()
    let outPath = try flags.required("--out")
    guard !outPath.isEmpty else { throw UsageError(message: "--out must not be empty") }
    let out = URL(fileURLWithPath: outPath)
    if let start = try flags.time("--start") { options.startMilliseconds = start }
    options.durationSeconds = try flags.integer("--duration", default: 60, range: 1...86_400)
    options.segmentSeconds = try flags.integer("--segment-seconds", default: 60, range: 1...3600)
    if let size = flags.string("--size") {
      let parts = size.split(separator: "x").compactMap { Int($0) }
      guard parts.count == 2, (16...4096).contains(parts[0]), (16...4096).contains(parts[1]),
        parts[0] % 2 == 0, parts[1] % 2 == 0
      else { throw UsageError(message: "--size must be WIDTHxHEIGHT, even, 16...4096") }
      (options.width, options.height) = (parts[0], parts[1])
    }
    options.fps = try flags.integer("--fps", default: 25, range: 1...120)
    options.gop = try flags.integer("--gop", default: 50, range: 1...10_000)
    switch flags.string("--video") ?? "h264" {
    case "h264": options.videoCodec = .h264
    case "h265": options.videoCodec = .h265
    case let other: throw UsageError(message: "--video must be h264 or h265, not '\(other)'")
    }
    switch flags.string("--audio") ?? "aac" {
    case "none": options.audioCodec = nil
    case let name:
      guard let codec = Codec(name: name), codec.kind == .audio else {
        throw UsageError(message: "--audio must be aac, g711a, g711u or none, not '\(name)'")
      }
      options.audioCodec = codec
      if codec != .aac { options.audioSampleRate = 8000 }
    }
    options.videoChannel = UInt8(try flags.integer("--video-channel", default: 0, range: 0...255))
    options.audioChannel = UInt8(try flags.integer("--audio-channel", default: 1, range: 0...255))
    options.encrypt = flags.has("--encrypt")
    options.beacon = flags.has("--beacon")
    options.deviceId = flags.string("--device-id") ?? "cam-0001"
    for gap in flags.all("--gap") {
      let parts = gap.split(separator: ":").compactMap { Int($0) }
      guard parts.count == 2, parts[0] >= 0, parts[1] > 0 else {
        throw UsageError(message: "--gap must be START_OFFSET_S:LENGTH_S, not '\(gap)'")
      }
      options.gaps.append((parts[0], parts[1]))
    }
    // Checked before anything is created: the whole recording must lie in representable time.
    let end = options.startMilliseconds.addingReportingOverflow(Int64(options.durationSeconds) * 1000)
    guard !end.overflow, MediaTime.validMilliseconds.contains(end.partialValue) else {
      throw UsageError(message: "--start plus --duration lies outside the representable times")
    }
    for gap in options.gaps where gap.offset >= options.durationSeconds || gap.length > options.durationSeconds {
      throw UsageError(message: "--gap \(gap.offset):\(gap.length) does not lie inside the recording")
    }
    let summary = try LibrarySynthesizer(options: options).write(to: out)
    if !flags.has("--quiet") && isatty(STDERR_FILENO) == 1 {
      StandardError.write(
        Data(
          ("wrote \(summary.index.segments.count) objects, \(summary.videoFrames.count) video frames, "
            + "\(summary.audioRecords) audio records to \(out.path)\n").utf8))
    }
    return 0
  }
}
