// kernels::gemm_bf16 against LibTorch's fp32 mm on the same values: operands drawn as bf16
// (so fp32 holds them exactly), every transposition, rows wider than the operand for A, B and C,
// a one-row operand with a zero row stride, and
// accumulation. Products of bf16 values are exact in fp32, so the two differ only by the order
// of fp32 sums: |diff| <= k * 2^-23 * sum |a||b| bounds it (the usual dot-product error bound).
#include <gtest/gtest.h>

#include <cmath>
#include <torch/torch.h>

#include "model/kernels/bf16_gemm.h"

namespace k = nmt::model::kernels;

namespace {

bool skip_without_bf16() {
  const std::string why = k::bf16_gemm_problem();
  if (why.empty()) return false;
  std::printf("bf16 GEMM unavailable here: %s\n", why.c_str());
  return true;
}

// Each operand's rows `pad` elements wider than the operand: stride(0) > size(1).
torch::Tensor padded(int64_t rows, int64_t cols, int64_t pad, torch::ScalarType type) {
  return torch::randn({rows, cols + pad}).to(type).narrow(1, 0, cols);
}

void expect_matches_fp32(int64_t m, int64_t n, int64_t kk, bool ta, bool tb, bool accumulate, int64_t pad) {
  torch::manual_seed(7);
  auto a = ta ? padded(kk, m, pad, torch::kBFloat16) : padded(m, kk, pad, torch::kBFloat16);
  auto b = tb ? padded(n, kk, pad + 1, torch::kBFloat16) : padded(kk, n, pad + 1, torch::kBFloat16);
  auto c = padded(m, n, pad + 2, torch::kFloat32);
  const auto c0 = c.clone();
  k::gemm_bf16(a, ta, b, tb, c, accumulate);
  const auto op_a = (ta ? a.t() : a).to(torch::kFloat32), op_b = (tb ? b.t() : b).to(torch::kFloat32);
  const auto want = torch::mm(op_a, op_b) + (accumulate ? c0 : torch::zeros_like(c0));
  const auto bound = torch::mm(op_a.abs(), op_b.abs()) * (kk + 2) * std::ldexp(1.0, -23) + 1e-6;
  const auto over = ((c - want).abs() - bound).max().item<double>();
  EXPECT_LE(over, 0.0) << "m " << m << " n " << n << " k " << kk << " ta " << ta << " tb " << tb << " acc "
                       << accumulate << " pad " << pad;
}

}  // namespace

TEST(Bf16Gemm, MatchesFp32MmOnBf16ValuesInEveryLayout) {
  if (skip_without_bf16()) GTEST_SKIP();
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true})
        for (int64_t pad : {0, 3}) expect_matches_fp32(67, 45, 129, ta, tb, acc, pad);
  EXPECT_FALSE(k::bf16_gemm_kernel().empty());
}

TEST(Bf16Gemm, OneRowOperandWithAnyRowStride) {
  if (skip_without_bf16()) GTEST_SKIP();
  // A one-row tensor may carry stride(0) 0 (an expand), which is no leading dimension.
  const auto a = torch::randn({1, 16}).to(torch::kBFloat16).expand({1, 16});
  const auto zero_stride = a.as_strided({1, 16}, {0, 1});
  const auto b = torch::randn({16, 8}).to(torch::kBFloat16);
  auto c = torch::empty({1, 8});
  k::gemm_bf16(zero_stride, false, b, false, c, false);
  EXPECT_TRUE(torch::allclose(c, torch::mm(a.to(torch::kFloat32), b.to(torch::kFloat32)), 1e-5, 1e-5));
}

TEST(Bf16Gemm, RefusesWrongTypesAndShapes) {
  if (skip_without_bf16()) GTEST_SKIP();
  auto a = torch::randn({4, 8}).to(torch::kBFloat16), b = torch::randn({8, 5}).to(torch::kBFloat16);
  auto c = torch::empty({4, 5});
  auto a32 = torch::randn({4, 8});
  EXPECT_THROW(k::gemm_bf16(a32, false, b, false, c, false), c10::Error);  // fp32 operand
  auto wrong = torch::empty({4, 6});
  EXPECT_THROW(k::gemm_bf16(a, false, b, false, wrong, false), c10::Error);  // n mismatch
  k::gemm_bf16(a, false, b, false, c, false);
  EXPECT_TRUE(torch::allclose(c, torch::mm(a.to(torch::kFloat32), b.to(torch::kFloat32)), 1e-5, 1e-5));
}

// The start's timing of bf16 against fp32 products gives finite positive rates and draws from a
// generator of its own: the seeded stream that makes parameters and dropout is where it was.
TEST(Bf16Gemm, SpeedTimingGivesRatesAndLeavesTheSeededStreamAlone) {
  if (skip_without_bf16()) GTEST_SKIP();
  torch::manual_seed(3);
  const auto expected = torch::rand({8});
  torch::manual_seed(3);
  const auto speed = k::time_bf16_against_fp32({{64, 48, 32, false, true}, {32, 48, 64, true, false}}, 0.02,
                                               k::GemmBackend::kMkl, /*fp32_on_transposed_copy=*/true);
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected));
  EXPECT_TRUE(std::isfinite(speed.bf16_flops_per_s) && speed.bf16_flops_per_s > 0) << speed.bf16_flops_per_s;
  EXPECT_TRUE(std::isfinite(speed.fp32_flops_per_s) && speed.fp32_flops_per_s > 0) << speed.fp32_flops_per_s;
}

TEST(Bf16Gemm, CpuIsaIsNamedByFlags) {
  const auto isa = k::cpu_bf16_isa();
  const std::string name = k::bf16_isa_name(isa);
  EXPECT_TRUE(name == "AMX" || name == "AVX512_BF16" || name == "none");
  // Where the CPU has no bf16 instructions the problem names the missing flags.
  if (isa == k::Bf16Isa::kNone) {
    EXPECT_NE(k::bf16_gemm_problem().find("avx512_bf16"), std::string::npos);
  }
}
