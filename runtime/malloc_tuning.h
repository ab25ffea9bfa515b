#pragma once
// Process-wide glibc malloc settings for training and decoding on the CPU (train,
// evaluate, translate: a decoding step allocates and frees tensors of the same shapes too).

namespace nmt::runtime {

// LibTorch's CPU allocator is plain malloc. By default glibc serves every block over its
// (dynamic, at most 32 MiB) mmap threshold with a fresh mmap and gives it back with munmap
// on free, so each update re-faults and the kernel re-zeroes the pages of every large
// activation and gradient: on 2 cores that was 25-30% of the wall time, in the kernel.
// Serving all blocks from the heap and never trimming it keeps freed pages mapped for the
// next update (peak resident memory unchanged in practice: the same shapes recur).
// Call once, first thing in main. A no-op where the C library is not glibc.
void keep_freed_memory_mapped();

}  // namespace nmt::runtime
