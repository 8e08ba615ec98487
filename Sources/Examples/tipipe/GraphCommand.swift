import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe graph` (`spec/cli.md`): the graph configurations the facade builds.
enum GraphCommand {
  static let summary = "print the graph Replay or Export builds (nodes, typed edges, queue bounds)"
  static let usage = """
    usage: tipipe graph replay|export [--format dot|json]

    Prints the graph configuration that Replay (video and audio outputs) or Export (video and audio
    into one MP4) builds: nodes with their types, edges with the item type they carry and their bounds,
    as Graphviz DOT (default) or JSON ({"nodes":[{"name","type"}],"edges":[{"from","to","type",
    "limits","thread_boundary"}]}).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    guard let kind = arguments.first, ["replay", "export"].contains(kind) else {
      throw UsageError(message: "graph needs replay or export")
    }
    let flags = try FlagParser(Array(arguments.dropFirst()), known: ["--format": .value])
    let format = flags.string("--format") ?? "dot"
    guard ["dot", "json"].contains(format) else { throw UsageError(message: "--format must be dot or json") }
    // A placeholder library: the graph is only built, never started, so nothing is read.
    let service = LocalLibraryService(directory: URL(fileURLWithPath: "/nonexistent"))
    let range = MediaRange(startMilliseconds: 0, endMilliseconds: 60_000)
    let pipeline: Pipeline
    if kind == "replay" {
      let replay = Replay(
        service: service,
        environment: .manual(executor: ManualExecutor(), clock: VirtualClock()))
      replay.bindVideo(channel: 0, renderer: NullRenderer())
      replay.bindAudio(channel: 1, device: NullAudioDevice())
      pipeline = try replay.configuration(range)
    } else {
      pipeline = try ExportJob.configuration(
        request: .init(
          range: range, videoTrack: TrackID(.video, channel: 0), audioTrack: TrackID(.audio, channel: 1),
          output: URL(fileURLWithPath: "/nonexistent/out.mp4")),
        source: CloudSegmentSource(service: service, range: range, token: "placeholder"))
    }
    if format == "dot" {
      if let error = StandardOutput.write(Data(pipeline.dot().utf8)) { fail(error) }
      return 0
    }
    let statistics = pipeline.statistics()
    let nodes: [[String: Any]] = statistics.nodes.map { ["name": $0.name, "type": $0.type] }
    let edges: [[String: Any]] = statistics.edges.map {
      ["from": $0.from, "to": $0.to, "type": $0.type, "limits": $0.limits, "thread_boundary": $0.isThreadBoundary]
    }
    let json = try JSONSerialization.data(
      withJSONObject: ["nodes": nodes, "edges": edges], options: [.sortedKeys, .withoutEscapingSlashes])
    if let error = StandardOutput.write(json + Data("\n".utf8)) { fail(error) }
    return 0
  }
}
