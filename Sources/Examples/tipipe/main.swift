import Foundation
import PipelineGraph

// `tipipe` — the command-line tool of ../shared/spec/cli.md, built only on the public API.
// Exit status: 0 success, 1 an operation failed (`error: name (code): message`), 2 usage error.

let usage = """
  usage: tipipe <command> [options]

  commands:
    demo [--cache DIR]             the main job: synthesize a library under the cache directory (once),
                                   list it, decode a minute through the graph, export a range with a gap
    synth --out DIR [--start T] [--duration S] [--segment-seconds 60] [--size 1280x720] [--fps 25]
          [--gop 50] [--video h264|h265] [--audio aac|g711a|g711u|none] [--video-channel 0]
          [--audio-channel 1] [--encrypt] [--gap OFFSET_S:LENGTH_S]... [--device-id ID]
                                   write a synthetic recording library (real H.264/H.265 + AAC/G.711)
    export --endpoint file:///DIR --start T --end T --video-channel N [--audio-channel N]
           --out FILE.mp4 [--report FILE.json|-] [--quiet] [--progress-lines]
                                   export [start, end) to one MP4 (gaps cut out) with its report
    help                           show this text

  Times are UTC milliseconds or ISO-8601 with a zone. Not built yet: serve, list, days,
  snapshot, play, graph (see the project's open issues).
  """

func fail(usage message: String) -> Never {
  FileHandle.standardError.write(Data("tipipe: \(message)\n".utf8))
  exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail(usage: "missing command (try `tipipe help`)") }
arguments.removeFirst()

switch command {
case "demo":
  do {
    try DemoCommand.run(arguments)
  } catch let error as UsageError {
    fail(usage: error.message)
  } catch let error as TiError {
    FileHandle.standardError.write(Data("error: \(error.code.name) (\(error.code.rawValue)): \(error.message)\n".utf8))
    exit(1)
  }
case "synth":
  do {
    try SynthCommand.run(arguments)
  } catch let error as UsageError {
    fail(usage: error.message)
  } catch let error as TiError {
    FileHandle.standardError.write(Data("error: \(error.code.name) (\(error.code.rawValue)): \(error.message)\n".utf8))
    exit(1)
  }
case "export":
  do {
    exit(try ExportCommand.run(arguments))
  } catch let error as UsageError {
    fail(usage: error.message)
  } catch let error as TiError {
    FileHandle.standardError.write(Data("error: \(error.code.name) (\(error.code.rawValue)): \(error.message)\n".utf8))
    exit(1)
  }
case "help", "--help", "-h":
  print(usage)
default:
  fail(usage: "unknown command '\(command)' (try `tipipe help`)")
}
