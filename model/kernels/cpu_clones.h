#pragma once
// NMT_CPU_CLONES: function multi-versioning for the hand-written CPU kernels. GCC compiles
// the marked function for AVX-512, x86-64-v3 (AVX2 with FMA) and baseline x86-64 and the
// loader picks the widest the CPU has, so loops vectorise at full width and the binary stays
// portable. x86-64-v3 rather than "avx2": AVX2 alone does not include FMA, and without it every
// multiply-add of that clone was a multiply and an add.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NMT_CPU_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define NMT_CPU_CLONES
#endif
