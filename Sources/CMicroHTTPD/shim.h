#ifndef TIPIPE_CMICROHTTPD_SHIM_H
#define TIPIPE_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot call: fixed-argument
// wrappers for the options the reference server uses.

// `threads > 1`: an epoll thread pool of that size; `threads == 0`: a thread per connection (for
// latency and bandwidth faults, whose sleeps must not hold other connections).
static inline struct MHD_Daemon *cmhd_start(const struct sockaddr_in *address, unsigned int threads,
                                            unsigned int connection_limit, MHD_AccessHandlerCallback handler,
                                            void *handler_context, MHD_RequestCompletedCallback completed,
                                            void *completed_context) {
  if (threads == 0) {
    return MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
                            0, NULL, NULL, handler, handler_context, MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned int)60, MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_END);
  }
  // Suspend/resume: a log upload's archive is inspected off the pool's threads, its connection parked.
  return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, handler,
                          handler_context, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_THREAD_POOL_SIZE, threads,
                          MHD_OPTION_CONNECTION_LIMIT, connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned int)60, MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                          MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_END);
}

static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info ? info->port : 0;
}

static const ssize_t cmhd_reader_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t cmhd_reader_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
#endif
