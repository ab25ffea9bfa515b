#include "model/kernels/small_gemm.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace nmt::model::kernels {
namespace {

// One register of floats per ISA: a 64-byte vector on AVX2 built each broadcast from 16 scalar
// stores and ran the products at a fraction of the FMA rate (measured on AMD Zen 3).
typedef float Vec64 __attribute__((vector_size(64)));  // AVX-512
typedef float Vec32 __attribute__((vector_size(32)));  // AVX2
typedef float Vec16 __attribute__((vector_size(16)));  // SSE

// C[rows i0..i0+R, columns j..j+V*lanes) = A B: R rows by V vectors of C stay in registers
// while k runs, so each step loads V vectors of B's row and broadcasts R elements of A into
// R * V multiply-adds, at the FMA units' rate in L1. Each element of C sums over k in the same
// order whatever the vector width, so every ISA with FMA gives the same bits.
template <typename Vec, int R, int V>
inline __attribute__((always_inline)) void gemm_block(int64_t i0, int64_t j, int64_t k, const float* a, int64_t lda,
                                                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int64_t lanes = sizeof(Vec) / sizeof(float);
  Vec acc[R][V] = {};
  for (int64_t p = 0; p < k; ++p) {
    Vec bv[V];
    for (int v = 0; v < V; ++v) std::memcpy(&bv[v], b + p * ldb + j + v * lanes, sizeof(Vec));
    for (int r = 0; r < R; ++r) {
      const float ar = a[(i0 + r) * lda + p];
      for (int v = 0; v < V; ++v) acc[r][v] += ar * bv[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) std::memcpy(c + (i0 + r) * ldc + j + v * lanes, &acc[r][v], sizeof(Vec));
}

// Rows i0..i0+R of C, in blocks of V vectors, the last columns in single vectors.
template <typename Vec, int R, int V>
inline __attribute__((always_inline)) void gemm_rows(int64_t i0, int64_t n, int64_t k, const float* a, int64_t lda,
                                                     const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int64_t lanes = sizeof(Vec) / sizeof(float);
  int64_t j = 0;
  for (; j + V * lanes <= n; j += V * lanes) gemm_block<Vec, R, V>(i0, j, k, a, lda, b, ldb, c, ldc);
  for (; j < n; j += lanes) gemm_block<Vec, R, 1>(i0, j, k, a, lda, b, ldb, c, ldc);
}

// C = A B in blocks of 4 rows by 2 vectors (8 accumulators, within AVX2's and SSE's 16 registers
// and AVX-512's 32), the last rows one at a time.
template <typename Vec>
inline __attribute__((always_inline)) void small_gemm_with(int64_t m, int64_t n, int64_t k, const float* a,
                                                           int64_t lda, const float* b, int64_t ldb, float* c,
                                                           int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) gemm_rows<Vec, 4, 2>(i, n, k, a, lda, b, ldb, c, ldc);
  for (; i < m; ++i) gemm_rows<Vec, 1, 2>(i, n, k, a, lda, b, ldb, c, ldc);
}

using SmallGemm = void (*)(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx512f"))) void small_gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a,
                                                          int64_t lda, const float* b, int64_t ldb, float* c,
                                                          int64_t ldc) {
  small_gemm_with<Vec64>(m, n, k, a, lda, b, ldb, c, ldc);
}
__attribute__((target("arch=x86-64-v3"))) void small_gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a,
                                                               int64_t lda, const float* b, int64_t ldb, float* c,
                                                               int64_t ldc) {
  small_gemm_with<Vec32>(m, n, k, a, lda, b, ldb, c, ldc);
}
#endif
void small_gemm_baseline(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                         float* c, int64_t ldc) {
  small_gemm_with<Vec16>(m, n, k, a, lda, b, ldb, c, ldc);
}

SmallGemm code_for(SmallGemmIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (isa == SmallGemmIsa::kAvx512) return small_gemm_avx512;
  if (isa == SmallGemmIsa::kAvx2) return small_gemm_avx2;
#endif
  return small_gemm_baseline;
}

// Picked once, the widest the CPU has (what NMT_CPU_CLONES does, with a vector type per ISA).
const SmallGemmIsa kWidest = cpu_runs(SmallGemmIsa::kAvx512) ? SmallGemmIsa::kAvx512
                             : cpu_runs(SmallGemmIsa::kAvx2) ? SmallGemmIsa::kAvx2
                                                             : SmallGemmIsa::kBaseline;
const SmallGemm kWidestCode = code_for(kWidest);

}  // namespace

const char* small_gemm_isa_name(SmallGemmIsa isa) {
  switch (isa) {
    case SmallGemmIsa::kAvx512:
      return "avx512";
    case SmallGemmIsa::kAvx2:
      return "avx2";
    case SmallGemmIsa::kBaseline:
      break;
  }
  return "baseline";
}

bool cpu_runs(SmallGemmIsa isa) {
  if (isa == SmallGemmIsa::kBaseline) return true;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();  // may run from a static initializer, before libgcc's own
  return isa == SmallGemmIsa::kAvx512 ? __builtin_cpu_supports("avx512f") : __builtin_cpu_supports("x86-64-v3");
#else
  return false;  // only the baseline is compiled
#endif
}

SmallGemmIsa widest_small_gemm_isa() { return kWidest; }

void small_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                int64_t ldc) {
  kWidestCode(m, n, k, a, lda, b, ldb, c, ldc);
}

void small_gemm_on(SmallGemmIsa isa, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc) {
  if (!cpu_runs(isa))
    throw std::invalid_argument(std::string("small_gemm: this CPU cannot run the ") + small_gemm_isa_name(isa) +
                                " code");
  code_for(isa)(m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace nmt::model::kernels
