#pragma once
// C = A B for the small products of one (sentence, head) pair of attention (short_attention.cpp):
// tens of rows, a head's width or a padded key count of columns, all in L1. A register-blocked
// micro-kernel at the FMA units' rate there, without a library call's dispatch and packing.
#include <cstdint>

namespace nmt::model::kernels {

// n, C's column count, must be a multiple of this (one AVX-512 register of floats).
constexpr int64_t kSmallGemmColumns = 16;

// The vector width the micro-kernel is compiled at. GCC lowers a vector type wider than the
// ISA's registers through the stack, so each ISA gets its own: AVX-512 16 floats, AVX2 (with
// FMA, x86-64-v3) 8, SSE 4.
enum class SmallGemmIsa { kAvx512, kAvx2, kBaseline };
const char* small_gemm_isa_name(SmallGemmIsa isa);  // "avx512", "avx2", "baseline"
bool cpu_runs(SmallGemmIsa isa);                     // whether this CPU has the instructions
SmallGemmIsa widest_small_gemm_isa();                // what small_gemm uses here

// C[m, n] = A[m, k] B[k, n], rows of A, B and C lda, ldb and ldc floats apart; C's previous
// values are overwritten. Each element sums over k in order, so every ISA with FMA (AVX2,
// AVX-512) gives the same bits.
void small_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                int64_t ldc);
// The same on a given ISA's code (tests; the CPU must run it).
void small_gemm_on(SmallGemmIsa isa, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc);

}  // namespace nmt::model::kernels
