internal import CFFmpeg
import Synchronization

/// What libav* prints on the process's stderr.
///
/// Quiet by default: the libraries' own lines ("non monotonically increasing dts", encoder statistics)
/// say nothing a user of tipipe can act on, and every failure they signal reaches the caller as a
/// ``TiError`` with its cause. A command line's `--verbose` turns them back on for diagnosis.
public enum LibraryLogging {
  /// The level chosen (`AV_LOG_QUIET` until ``setVerbose(_:)``).
  private static let level = Atomic<Int32>(AV_LOG_QUIET)
  /// The libraries are in use: a level chosen now is applied at once.
  private static let applied = Atomic<Bool>(false)

  /// Lets libav* print its warnings and errors (`true`) or nothing (`false`) from now on. Applied before
  /// the first libav* call, not here: libav* is loaded on first use (LazyLibraries), and a command that
  /// never decodes must not load it to set its log level.
  public static func setVerbose(_ verbose: Bool) {
    level.store(verbose ? AV_LOG_WARNING : AV_LOG_QUIET, ordering: .sequentiallyConsistent)
    if applied.load(ordering: .sequentiallyConsistent) {
      av_log_set_level(level.load(ordering: .sequentiallyConsistent))
    }
  }

  /// Applies the level chosen (quiet by default) once; called before the first libav* call.
  static func applyDefault() { _ = firstUse }

  private static let firstUse: Void = {
    applied.store(true, ordering: .sequentiallyConsistent)
    av_log_set_level(level.load(ordering: .sequentiallyConsistent))
  }()
}
