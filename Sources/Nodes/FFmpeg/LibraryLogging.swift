internal import CFFmpeg
internal import LazyLibraries

/// What libav* prints on the process's stderr.
///
/// Quiet by default: the libraries' own lines ("non monotonically increasing dts", encoder statistics)
/// say nothing a user of tipipe can act on, and every failure they signal reaches the caller as a
/// ``MediaError`` with its cause. A command line's `--verbose` turns them back on for diagnosis.
public enum LibraryLogging {
  /// Lets libav* print its warnings and errors (`true`) or nothing (`false`, the default) from now on.
  /// libav* is loaded on first use (LazyLibraries): the level is set as it loads, before its first call
  /// from anywhere, and a command that never decodes does not load it to set a level.
  public static func setVerbose(_ verbose: Bool) {
    tipipe_lazy_set_ffmpeg_log_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET)
  }
}
