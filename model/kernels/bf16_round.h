#pragma once
// fp32 -> bf16 rounding (to nearest, ties to even; NaN to the quiet NaN 0x7FC0) written as
// integer arithmetic and a select, so that a loop of it vectorises. The epilogues that already
// read an fp32 tensor (bias + ReLU, the ReLU's mask, the bias gradient's sums) write its bf16
// copy in the same pass instead of a separate cast over it (issue 33). Bit for bit
// c10::BFloat16's own rounding (c10::detail::round_to_nearest_even), which LibTorch's
// .to(kBFloat16) also computes on every value but NaN (tests/bf16_round_test.cpp). The
// constructor itself branches on isnan and did not vectorise: a fused loop through it ran 10%
// slower than the two passes.
#include <cstdint>
#include <cstring>

namespace nmt::model::kernels {

inline uint16_t bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return value != value ? uint16_t{0x7FC0} : static_cast<uint16_t>(rounded);
}

}  // namespace nmt::model::kernels
