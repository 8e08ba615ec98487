// Byte scans of coded media that run over every byte an export writes, in C for the vector
// instructions Swift does not reach portably.
#ifndef TIPIPE_MEDIA_KERNELS_H
#define TIPIPE_MEDIA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/// The first Annex B start code (`00 00 01`, or the `00 00 00 01` around it) whose `0x01` lies in
/// `[from + 2, end - 2]` (at least one byte follows it); its offset (the extra leading zero included
/// when it lies after `from`), or `end` when there is none. `bytes` holds `end` bytes.
size_t tipipe_annexb_start_code(const uint8_t *bytes, size_t from, size_t end);

#endif
