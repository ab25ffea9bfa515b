#pragma once
// exp(x) for x <= 0, written so that the compiler vectorises the loops calling it (compile
// them with nmtrain_vectorized_kernels and NMT_CPU_CLONES): Cephes' expf polynomial, within
// 2 ulp of std::exp. The hand-written softmax kernels only ever exponentiate a logit minus
// its row's max or log-sum-exp. Arguments below -87 return ~1e-38 instead of 0 or a
// denormal, which is nothing next to a row's sum (at least 1).
#include <cmath>
#include <cstdint>

namespace nmt::model::kernels {

// Always inlined: a call per element, which the compiler chose once the decoding attention
// kernel grew (perf: 4.6% of bf16 decoding at beam 5 in the call itself), also keeps the loop
// from being vectorised.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;  // a value select, not std::max's reference: keeps the loop vectorisable
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 0]
  return p * __builtin_bit_cast(float, bits);
}

}  // namespace nmt::model::kernels
