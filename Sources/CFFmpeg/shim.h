#ifndef TIPIPE_CFFMPEG_SHIM_H
#define TIPIPE_CFFMPEG_SHIM_H
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

// Function-like macros and compound literals Swift cannot import.
static inline int cff_averror(int posixError) { return AVERROR(posixError); }
static inline int cff_error_eagain(void) { return AVERROR(EAGAIN); }
static inline int cff_error_eof(void) { return AVERROR_EOF; }
static inline int cff_error_invalid_data(void) { return AVERROR_INVALIDDATA; }
static inline int64_t cff_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational cff_time_base_q(void) { return AV_TIME_BASE_Q; }
static inline AVChannelLayout cff_channel_layout_mono(void) {
  AVChannelLayout layout = AV_CHANNEL_LAYOUT_MONO;
  return layout;
}
static inline AVChannelLayout cff_channel_layout_stereo(void) {
  AVChannelLayout layout = AV_CHANNEL_LAYOUT_STEREO;
  return layout;
}
static inline uint32_t cff_mktag(char a, char b, char c, char d) { return MKTAG(a, b, c, d); }
#endif
