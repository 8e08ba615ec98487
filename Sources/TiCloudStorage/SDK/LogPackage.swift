import Foundation
import Nodes

/// What a log upload sends: a `.tar.gz` of the work root's logs and of the raw dumps that ended since the
/// last successful upload, with a `manifest.json` naming each file and its size (a dump's own manifest has the SHA-256 of its
/// media files).
struct LogPackage {
  /// The archive (under the work root's `upload/`; the caller removes it).
  let archive: URL
  /// Files in it, manifest included.
  let entries: Int
  /// The dump folders it holds (marked uploaded once it was sent).
  let dumps: [URL]

  /// Packages the logs and the pending dumps of `workRoot` for `appId`.
  static func make(workRoot: URL, appId: String) throws -> LogPackage {
    let folder = workRoot.appendingPathComponent("upload", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let archiveURL = folder.appendingPathComponent("log-\(UUID().uuidString.lowercased()).tar.gz")
    var files: [(source: URL, name: String)] = []
    let logs = workRoot.appendingPathComponent("logs", isDirectory: true)
    for name in ["cloudstorage.log"] + (1...RuntimeLog.keptFiles).map({ "cloudstorage.log.\($0)" })
    where isRegularFile(logs.appendingPathComponent(name)) {
      files.append((logs.appendingPathComponent(name), "logs/\(name)"))
    }
    let dumps = RawDumpFolder.pendingUpload(in: workRoot.appendingPathComponent("dumps", isDirectory: true))
    for dump in dumps {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: dump.path)) ?? []
      for name in names.sorted() where name != "uploaded" && isRegularFile(dump.appendingPathComponent(name)) {
        files.append((dump.appendingPathComponent(name), "dumps/\(dump.lastPathComponent)/\(name)"))
      }
    }
    do {
      let archive = try LogArchive(url: archiveURL)
      var listed: [[String: Any]] = []
      for file in files {
        try archive.add(file: file.source, as: file.name)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.source.path)
        listed.append(["name": file.name, "bytes": attributes[.size] as? Int ?? 0])
      }
      let manifest: [String: Any] = [
        "format": "tirtc-log-upload/1", "app_id": appId, "created_unix_ms": Int64(Date().timeIntervalSince1970 * 1000),
        "raw_dumps": dumps.map(\.lastPathComponent), "files": listed,
      ]
      try archive.add(
        try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]),
        as: "manifest.json")
      try archive.close()
      return LogPackage(archive: archiveURL, entries: files.count + 1, dumps: dumps)
    } catch {
      try? FileManager.default.removeItem(at: archiveURL)
      throw error
    }
  }

  /// Only regular files are packaged (never what a link points to).
  private static func isRegularFile(_ url: URL) -> Bool {
    var status = stat()
    return lstat(url.path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
  }
}
