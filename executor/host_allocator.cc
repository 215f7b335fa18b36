#include "executor/host_allocator.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace meshplan::exec {

void KeepFreedHostMemoryMapped() {
#if defined(__GLIBC__)
  // The largest mmap threshold glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2).
  constexpr int kMmapThresholdBytes = 32 << 20;
  constexpr int kNoTrimBytes = 0x7fffffff;
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  mallopt(M_TRIM_THRESHOLD, kNoTrimBytes);
#endif
}

}  // namespace meshplan::exec
