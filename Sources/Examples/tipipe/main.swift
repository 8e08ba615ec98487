import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

// `tipipe` — the command-line tool of ../shared/spec/cli.md, built only on the public API.
// Exit status: 0 success, 1 an operation failed (`error: name (code): message`), 2 usage error.

// First of all: from here on SIGINT, SIGTERM and SIGHUP cancel instead of killing the process.
Interruption.shared.install()
// Tests deliver a signal at exactly this point: the process stops itself here until continued.
if ProcessInfo.processInfo.environment["TIPIPE_STOP_AFTER_SIGNAL_SETUP"] == "1" { raise(SIGSTOP) }
// A standard stream the caller closed is held by /dev/null, so that no file the process opens later (the
// SDK's log) takes its descriptor and receives the JSON lines; machine output to a closed stdout fails.
StandardOutput.reserveClosedStreams()

/// A subcommand: its help text and what runs it (returning the exit status).
struct Command {
  var summary: String
  var usage: String
  var run: ([String]) throws -> Int32
}

let commands: [(name: String, command: Command)] = [
  ("demo", Command(summary: DemoCommand.summary, usage: DemoCommand.usage, run: { try DemoCommand.run($0) })),
  ("synth", Command(summary: SynthCommand.summary, usage: SynthCommand.usage, run: { try SynthCommand.run($0) })),
  ("export", Command(summary: ExportCommand.summary, usage: ExportCommand.usage, run: { try ExportCommand.run($0) })),
  ("serve", Command(summary: ServeCommand.summary, usage: ServeCommand.usage, run: { try ServeCommand.run($0) })),
  ("token", Command(summary: TokenCommand.summary, usage: TokenCommand.usage, run: { try TokenCommand.run($0) })),
  ("list", Command(summary: ListCommand.summary, usage: ListCommand.usage, run: { try ListCommand.run($0) })),
  ("days", Command(summary: DaysCommand.summary, usage: DaysCommand.usage, run: { try DaysCommand.run($0) })),
  ("play", Command(summary: PlayCommand.summary, usage: PlayCommand.usage, run: { try PlayCommand.run($0) })),
  (
    "snapshot",
    Command(
      summary: SnapshotCommand.summary, usage: SnapshotCommand.usage, run: { try SnapshotCommand.run($0) })
  ),
  ("graph", Command(summary: GraphCommand.summary, usage: GraphCommand.usage, run: { try GraphCommand.run($0) })),
  ("bench", Command(summary: BenchCommand.summary, usage: BenchCommand.usage, run: { try BenchCommand.run($0) })),
  ("probe", Command(summary: ProbeCommand.summary, usage: ProbeCommand.usage, run: { try ProbeCommand.run($0) })),
  ("record", Command(summary: RecordCommand.summary, usage: RecordCommand.usage, run: { try RecordCommand.run($0) })),
  (
    "thumbnails",
    Command(
      summary: ThumbnailsCommand.summary, usage: ThumbnailsCommand.usage, run: { try ThumbnailsCommand.run($0) })
  ),
]

@MainActor func generalUsage() -> String {
  var text = "usage: tipipe <command> [options]   (tipipe help <command>, or <command> --help)\n\ncommands:\n"
  // One column as wide as the longest name: a name is never cut ("thumbnails" was "thumbnai").
  let width = commands.map(\.0.count).max() ?? 0
  for (name, summary) in commands.map({ ($0.0, $0.1.summary) }) + [("help", "this text, or a command's")] {
    text += "  \(name.padding(toLength: width, withPad: " ", startingAt: 0)) \(summary)\n"
  }
  text += "\n"
  text += "Every command takes --verbose (the media libraries' own warnings on stderr).\n"
  text += "Times are UTC milliseconds or ISO-8601 with a zone.\n"
  text += "Secrets stay off the command line (every local user sees it through ps): --token K may be\n"
  text += "--token-file F or TIPIPE_TOKEN, --secret S --secret-file F or TIPIPE_SECRET."
  return text
}

func fail(usage message: String) -> Never {
  StandardError.write(Data("tipipe: \(message.oneLine)\n".utf8))
  exit(2)
}

func fail(_ error: TiError) -> Never {
  StandardError.report(error)
  exit(error.code == .invalidArgument ? 2 : 1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else { fail(usage: "missing command (try `tipipe help`)") }
arguments.removeFirst()

if ["help", "--help", "-h"].contains(name) {
  if let topic = arguments.first {
    guard let command = commands.first(where: { $0.name == topic })?.command else {
      fail(usage: "unknown command '\(topic)' (try `tipipe help`)")
    }
    print(command.usage)
  } else {
    print(generalUsage())
  }
  exit(0)
}
guard let command = commands.first(where: { $0.name == name })?.command else {
  fail(usage: "unknown command '\(name)' (try `tipipe help`)")
}
if arguments.contains("--help") || arguments.contains("-h") {
  print(command.usage)
  exit(0)
}
let verbose = arguments.contains("--verbose")
arguments.removeAll { $0 == "--verbose" }
LibraryLogging.setVerbose(verbose)
if !["export", "list", "days", "serve", "play"].contains(name) {
  // Commands without a cancellable task stop where they are; what they wrote is kept.
  Interruption.shared.onSignal { signal in
    StandardError.report(Interruption.cancellation(by: signal))
    _exit(1)  // not exit(): the main thread is still at work, and must not race the exit handlers
  }
}

do {
  exit(try command.run(arguments))
} catch let error as UsageError {
  fail(usage: error.message)
} catch {
  // The engine's failures get their seed-000 codes here, as the SDK's do (TiError's mapping).
  fail(TiError(error))
}
