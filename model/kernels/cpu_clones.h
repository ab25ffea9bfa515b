#pragma once
// NMT_CPU_CLONES: function multi-versioning for the hand-written CPU kernels. GCC compiles
// the marked function for AVX-512, AVX2 and baseline x86-64 and the loader picks the
// widest the CPU has, so loops vectorise at full width and the binary stays portable.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NMT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NMT_CPU_CLONES
#endif
