import Foundation
import PipelineGraph

// `tipipe` — the command-line tool of ../shared/spec/cli.md, built only on the public API.
// Exit status: 0 success, 1 an operation failed (`error: name (code): message`), 2 usage error.

let usage = """
  usage: tipipe <command> [options]

  commands:
    demo [--seconds N] [--fps N]   run the engine demo: a synthetic 25 fps stream through a two-thread
                                   graph, paced by a free-running clock; prints the graph and its counters
    help                           show this text

  The media commands of the contract (synth, serve, list, days, export, snapshot, play, graph) are not
  built yet; see the project's open issues.
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
    let options = try DemoOptions(parsing: arguments)
    try runDemo(options)
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
