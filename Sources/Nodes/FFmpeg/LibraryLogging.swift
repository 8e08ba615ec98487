internal import CFFmpeg
import Synchronization

/// What libav* prints on the process's stderr.
///
/// Quiet by default: the libraries' own lines ("non monotonically increasing dts", encoder statistics)
/// say nothing a user of tipipe can act on, and every failure they signal reaches the caller as a
/// ``TiError`` with its cause. A command line's `--verbose` turns them back on for diagnosis.
public enum LibraryLogging {
  private static let chosen = Atomic<Bool>(false)

  /// Lets libav* print its warnings and errors (`true`) or nothing (`false`) from now on.
  public static func setVerbose(_ verbose: Bool) {
    chosen.store(true, ordering: .sequentiallyConsistent)
    av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET)
  }

  /// Applies the default (quiet) once, unless a level was chosen; called before the first libav* call.
  static func applyDefault() { _ = quietByDefault }

  private static let quietByDefault: Void = {
    if !chosen.load(ordering: .sequentiallyConsistent) { av_log_set_level(AV_LOG_QUIET) }
  }()
}
