// fallocate(2) is declared only under _GNU_SOURCE, which Swift's Glibc module does not define.
#define _GNU_SOURCE
#include "MediaKernels.h"

#include <errno.h>
#include <fcntl.h>

int tipipe_preallocate(int descriptor, int64_t offset, int64_t length) {
  while (fallocate(descriptor, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}
