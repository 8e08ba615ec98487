// What every byte an export writes passes through, in C where Swift does not reach: byte scans of coded
// media (for the vector instructions) and the preallocation of the file written (`fallocate`).
#ifndef TIPIPE_MEDIA_KERNELS_H
#define TIPIPE_MEDIA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/// The first Annex B start code (`00 00 01`, or the `00 00 00 01` around it) whose `0x01` lies in
/// `[from + 2, end - 2]` (at least one byte follows it); its offset (the extra leading zero included
/// when it lies after `from`), or `end` when there is none. `bytes` holds `end` bytes.
size_t tipipe_annexb_start_code(const uint8_t *bytes, size_t from, size_t end);

/// Allocates `length` bytes of blocks at `offset` of the open file `descriptor` without changing its
/// size (`fallocate` with `FALLOC_FL_KEEP_SIZE`); 0, or the `errno` (`EOPNOTSUPP` where the file system
/// cannot).
int tipipe_preallocate(int descriptor, int64_t offset, int64_t length);

#endif
