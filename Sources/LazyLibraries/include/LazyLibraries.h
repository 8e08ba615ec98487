// FFmpeg and SDL2, bound on first call (scripts/lazy-libraries.py writes the stubs): a command that
// never decodes, scales or opens a window never loads them, nor the hundred libraries they pull in.
#ifndef TIPIPE_LAZY_LIBRARIES_H
#define TIPIPE_LAZY_LIBRARIES_H

/// Sets libav*'s log level (av_log_set_level): at once when it is loaded, else as soon as it is, before its
/// first call from anywhere.
void tipipe_lazy_set_ffmpeg_log_level(int level);

#endif
