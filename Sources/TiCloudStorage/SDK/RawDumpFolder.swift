import Foundation

/// The raw dumps of the work root's `dumps/` folder: `rawdump-<UTC time>-<id>/` each, complete when it
/// holds `manifest.json`, uploaded once it holds `uploaded` (the marker outlives the process, so a dump
/// goes with the next upload only, X16, even after a restart).
enum RawDumpFolder {
  static let prefix = "rawdump-"

  /// A fresh, not yet created folder for a dump.
  static func newDump(in folder: URL) -> URL {
    let stamp = Date().formatted(
      .iso8601.year().month().day().dateSeparator(.omitted).time(includingFractionalSeconds: false).timeSeparator(
        .omitted))
    let id = UUID().uuidString.prefix(8).lowercased()
    return folder.appendingPathComponent("\(prefix)\(stamp)-\(id)", isDirectory: true)
  }

  /// The dump folders, oldest first (names sort by time). Only real directories named by the SDK count:
  /// anything else a user put there is never touched.
  static func dumps(in folder: URL) -> [URL] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.filter { $0.hasPrefix(prefix) }.sorted().map { folder.appendingPathComponent($0, isDirectory: true) }
      .filter { url in
        var status = stat()
        return lstat(url.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
      }
  }

  /// Completed dumps not yet uploaded.
  static func pendingUpload(in folder: URL) -> [URL] {
    dumps(in: folder).filter { isComplete($0) && !isUploaded($0) }
  }

  static func isComplete(_ dump: URL) -> Bool {
    FileManager.default.fileExists(atPath: dump.appendingPathComponent("manifest.json").path)
  }

  static func isUploaded(_ dump: URL) -> Bool {
    FileManager.default.fileExists(atPath: dump.appendingPathComponent("uploaded").path)
  }

  /// Marks `dump` as uploaded.
  static func markUploaded(_ dump: URL) {
    _ = FileManager.default.createFile(atPath: dump.appendingPathComponent("uploaded").path, contents: Data())
  }

  /// Removes the oldest dump folders beyond `count` (the running dump's is never among them: there is
  /// none while a new one starts).
  static func prune(_ folder: URL, keeping count: Int) {
    for dump in dumps(in: folder).dropLast(max(0, count)) {
      try? FileManager.default.removeItem(at: dump)
    }
  }
}
