// kernels::bf16_bits (the epilogues' fp32 -> bf16 rounding) against LibTorch's own rounding:
// c10::BFloat16's constructor and Tensor::to(kBFloat16), bit for bit, on ties to even and odd,
// subnormals, zeros, infinities, overflow to infinity and a wide spread of random values.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/kernels/bf16_round.h"

namespace k = nmt::model::kernels;

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<float> edge_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min()};
  // Exactly halfway between two bf16 values, with an even and an odd lower neighbour (ties go
  // to the even one), just below and just above halfway, in normal and subnormal ranges.
  for (const uint32_t high : {0x3F80u, 0x3F81u, 0x0001u, 0x0002u, 0x7F7Fu, 0xBF80u, 0xBF81u})
    for (const uint32_t low : {0x8000u, 0x7FFFu, 0x8001u, 0x0001u, 0xFFFFu}) v.push_back(from_bits(high << 16 | low));
  return v;
}

}  // namespace

TEST(Bf16Round, MatchesLibTorchRoundingBitForBit) {
  std::vector<float> values = edge_values();
  torch::manual_seed(11);
  // Normals of every scale from 2^-140 to 2^120, and raw random bit patterns (NaNs excluded:
  // LibTorch's vectorised cast writes a different NaN; the constructor is checked on NaN below).
  const auto scales = torch::pow(2.0, torch::randint(-140, 120, {20000}).to(torch::kFloat32));
  const auto spread = torch::randn({20000}) * scales;
  for (int64_t i = 0; i < spread.numel(); ++i) values.push_back(spread[i].item<float>());
  const auto raw = torch::randint(0, 1ll << 32, {20000}, torch::kInt64);
  for (int64_t i = 0; i < raw.numel(); ++i) {
    const float f = from_bits(static_cast<uint32_t>(raw[i].item<int64_t>()));
    if (!std::isnan(f)) values.push_back(f);
  }
  const auto as_tensor = torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, torch::kFloat32);
  const auto libtorch = as_tensor.to(torch::kBFloat16).contiguous();
  const auto* want = libtorch.const_data_ptr<c10::BFloat16>();
  int mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t got = k::bf16_bits(values[i]);
    if (got != want[i].x || got != c10::BFloat16(values[i]).x)
      if (++mismatches <= 5)
        ADD_FAILURE() << "value " << values[i] << ": ours 0x" << std::hex << got << ", LibTorch 0x" << want[i].x
                      << ", c10::BFloat16 0x" << c10::BFloat16(values[i]).x;
  }
  EXPECT_EQ(mismatches, 0) << "of " << values.size() << " values";
}

TEST(Bf16Round, NanIsTheQuietNan) {
  for (const float nan : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                          from_bits(0x7F800001u), from_bits(0x7FFFFFFFu)}) {
    EXPECT_EQ(k::bf16_bits(nan), 0x7FC0);
    EXPECT_EQ(k::bf16_bits(nan), c10::BFloat16(nan).x);
  }
}
