#ifndef TIPIPE_CCURL_SHIM_H
#define TIPIPE_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt/getinfo are variadic, which Swift cannot call: one typed wrapper per argument kind.
static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_write_callback(CURL *h, CURLoption o, curl_write_callback v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode ccurl_setopt_read_callback(CURL *h, CURLoption o, curl_read_callback v) {
  return curl_easy_setopt(h, o, v);
}
static const size_t ccurl_readfunc_abort = CURL_READFUNC_ABORT;
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
#endif
