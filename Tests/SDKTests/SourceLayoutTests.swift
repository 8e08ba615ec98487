import Foundation
import Testing

/// What issue 25 asked of the code's shape, kept: the SDK layer in small files, seed codes only at its
/// edges.
@Suite("Source layout")
struct SourceLayoutTests {
  /// The package's root (three folders above this file).
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  func swiftFiles(under folder: String) throws -> [URL] {
    let directory = root.appendingPathComponent(folder)
    let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
    return enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
  }

  @Test("no file of the SDK layer is over 400 lines")
  func smallFiles() throws {
    let files = try swiftFiles(under: "Sources/TiCloudStorage")
    #expect(files.count > 20)
    for file in files {
      let lines =
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        .count - 1
      #expect(lines <= 400, "\(file.lastPathComponent): \(lines) lines")
    }
  }

  @Test("the engine names no seed code: TiError and TiErrorCode live in the SDK layer only")
  func seedCodesAtTheEdge() throws {
    let files = try swiftFiles(under: "Sources/Nodes") + swiftFiles(under: "Sources/PipelineGraph")
    #expect(files.count > 50)
    for file in files {
      // Code, not comments (which may say where the codes are).
      let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").filter {
        !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
      }
      #expect(!code.contains { $0.contains("TiError") }, "\(file.lastPathComponent) names a seed code")
    }
  }
}
