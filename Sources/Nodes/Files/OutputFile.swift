import Foundation
import PipelineGraph

/// The policy for every file tipipe writes at a path its user names (an export, a recording, a report):
/// written under a temporary name beside the destination, renamed into place only when complete, and the
/// rename replaces nothing but a regular file (`spec/cli.md`, "Output paths").
///
/// Temporary names carry the writer's process id — `.<name>.<pid>.<uuid>.partial.mp4` — so that a later
/// writer into the same directory can tell the leftovers of a process that died (SIGKILL, power loss)
/// from the files of one still running, and remove only the former.
public enum OutputFile {
  /// Checks that `url` may be written as an output: a non-empty path that is missing or a regular file.
  /// Throws `invalidArgument` otherwise; nothing on disk changes. (A directory that does not exist is
  /// found when the file is created: `writeFailed`.)
  public static func validate(_ url: URL) throws {
    let path = url.path
    guard !path.isEmpty, !url.lastPathComponent.isEmpty else {
      throw MediaError(.invalidArgument, "the output path is empty")
    }
    var status = stat()
    if lstat(path, &status) == 0 {
      let kind = status.st_mode & S_IFMT
      guard kind == S_IFREG else {
        throw MediaError(
          .invalidArgument,
          "\(path) exists and is \(kind == S_IFDIR ? "a directory" : "not a regular file"); it is not replaced")
      }
    } else if errno != ENOENT {
      let failure = LibraryFailure.posix(errno)
      throw MediaError(.invalidArgument, "cannot examine \(path): \(failure.text)", domain: .storage, cause: failure)
    }
  }

  /// True when `a` and `b` name the same file: the same inode when both exist, else the same absolute
  /// path once the directory's symbolic links are resolved.
  public static func sameFile(_ a: URL, _ b: URL) -> Bool {
    var first = stat()
    var second = stat()
    if stat(a.path, &first) == 0, stat(b.path, &second) == 0 {
      return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }
    func canonical(_ url: URL) -> String {
      url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent)
        .standardizedFileURL.path
    }
    return canonical(a) == canonical(b)
  }

  /// Writes `data` at `url` through a temporary file and an atomic rename.
  public static func write(_ data: Data, to url: URL) throws {
    try validate(url)
    let temporary = workingPath(for: url, suffix: ".partial")
    do {
      try data.write(to: URL(fileURLWithPath: temporary), options: .withoutOverwriting)
    } catch {
      try? FileManager.default.removeItem(atPath: temporary)
      throw MediaError(.writeFailed, "cannot write \(url.path): \(error.localizedDescription)")
    }
    try install(temporary, at: url)
  }

  /// A fresh temporary path beside `destination`, named after it and this process.
  package static func workingPath(for destination: URL, suffix: String = ".partial.mp4") -> String {
    destination.deletingLastPathComponent()
      .appendingPathComponent(
        ".\(workingName(of: destination.lastPathComponent)).\(getpid()).\(UUID().uuidString)\(suffix)"
      ).path
  }

  /// The part of a temporary file's name that comes from its destination's `name`: the name, or as much of
  /// it as leaves room for the rest (a dot, a pid, a UUID, a suffix: at most 80 bytes) within the 255 bytes a
  /// file name may have — a destination with a long legal name is written too.
  static func workingName(of name: String) -> String {
    let room = Int(NAME_MAX) - 80
    guard name.utf8.count > room else { return name }
    var kept = ""
    for character in name {
      guard kept.utf8.count + character.utf8.count <= room else { break }
      kept.append(character)
    }
    return kept
  }

  /// Renames `temporary` to `destination`, which must be missing or a regular file (checked just
  /// before). On failure `temporary` is removed.
  package static func install(_ temporary: String, at destination: URL) throws {
    var status = stat()
    if lstat(destination.path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
      unlink(temporary)
      throw MediaError(.writeFailed, "\(destination.path) is no longer a regular file; it is not replaced")
    }
    guard rename(temporary, destination.path) == 0 else {
      let failure = LibraryFailure.posix(errno)
      unlink(temporary)
      throw MediaError(
        .writeFailed, "cannot rename the finished file to \(destination.path): \(failure.text)", cause: failure)
    }
  }

  /// Removes the temporary files that writers of `destination` left beside it when they died: regular
  /// files named `.<name>.<pid>.<uuid>.partial…` whose process no longer exists.
  package static func removeStaleWorkingFiles(besides destination: URL) {
    removeStaleWorkingFiles(in: destination.deletingLastPathComponent(), named: destination.lastPathComponent)
  }

  /// Removes the temporary files of any writer into `directory` that died (a recording's, in the SDK's
  /// media folder, after a SIGKILL); with `name`, only those of writers of that file.
  package static func removeStaleWorkingFiles(in directory: URL, named name: String? = nil) {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
    for entry in names where entry.hasPrefix(".") {
      let parts = entry.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
      // `<name>.<pid>.<uuid>.partial…`: the name may hold dots, the rest does not.
      guard let index = parts.lastIndex(where: { UUID(uuidString: String($0)) != nil }), index >= 2,
        index + 1 < parts.count, parts[index + 1].hasPrefix("partial"), let pid = Int32(parts[index - 1]), pid > 0
      else { continue }
      if let name, parts[..<(index - 1)].joined(separator: ".") != workingName(of: name) { continue }
      guard pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
      let path = directory.appendingPathComponent(entry).path
      var status = stat()
      guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
      unlink(path)
    }
  }
}
