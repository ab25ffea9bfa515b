#include "runtime/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>

#include <climits>
#endif

namespace nmt::runtime {

void keep_freed_memory_mapped() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);                // every block from the heap, none from mmap
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // keep up to 2 GiB of free heap top: in practice, never trim
#endif
}

}  // namespace nmt::runtime
