import Dispatch
import Foundation
import Nodes
import PipelineGraph

/// The work root (`~/.cache/tirtc`), its folders, and endpoints as logs may show them.
extension Runtime {
  /// `$XDG_CACHE_HOME/tirtc`, else `~/.cache/tirtc` (the Linux place of the seed's `NSCachesDirectory/tirtc`).
  static func defaultWorkRoot() -> URL {
    if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], !xdg.isEmpty {
      return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("tirtc", isDirectory: true)
    }
    return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/tirtc", isDirectory: true)
  }

  /// The embedded default service: the local library `library/` under the work root.
  static func defaultEndpoint(workRoot: URL) -> String {
    workRoot.appendingPathComponent("library", isDirectory: true).absoluteString
  }

  /// Creates the work root and its folders (logs, media); throws when any cannot be created or opened.
  static func prepare(_ root: URL) throws {
    for folder in ["", "logs", "media", "dumps"] {
      let url = folder.isEmpty ? root : root.appendingPathComponent(folder, isDirectory: true)
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
        access(url.path, R_OK | W_OK | X_OK) == 0
      else { throw TiError(.workDirectoryUnavailable, "\(url.path) cannot be used") }
    }
  }

  /// The endpoint without its query string and its user and password (a presigned or token-bearing URL
  /// never reaches a log).
  static func redacted(_ endpoint: String) -> String {
    let base = endpoint.split(separator: "?", maxSplits: 1).first.map(String.init) ?? endpoint
    guard var parts = URLComponents(string: base), parts.user != nil || parts.password != nil else { return base }
    parts.user = nil
    parts.password = nil
    return parts.string ?? ""
  }
}
